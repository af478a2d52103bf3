import { useMemo } from "react";
import { Route, Routes } from "react-router";
import { Provider } from "urql";
import { AuthProvider, useAuth } from "./auth";
import { makeClient } from "./client";
import { Layout, NamespaceLayout } from "./components/Layout";
import { Home } from "./pages/Home";
import { SignIn } from "./pages/SignIn";
import { NamespaceOverview } from "./pages/NamespaceOverview";
import { RepositoryList } from "./pages/RepositoryList";
import { NewRepository } from "./pages/NewRepository";
import { RepositoryDetail } from "./pages/RepositoryDetail";
import { ImageDetail } from "./pages/ImageDetail";
import { Trash } from "./pages/Trash";
import { LifecyclePolicy } from "./pages/LifecyclePolicy";
import { NpmPackageDetail } from "./pages/NpmPackages";
import { MavenPackageDetail, MavenVersionDetail } from "./pages/MavenPackages";
import { AccessTokens } from "./pages/AccessTokens";
import { GarbageCollection } from "./pages/GarbageCollection";
import { PublishHistory } from "./pages/PublishHistory";
import { ChecksumSearch } from "./pages/ChecksumSearch";
import { NotFound } from "./pages/NotFound";

/** The routes of every screen; each URL can be shared. */
export function AppRoutes() {
  return (
    <Routes>
      <Route element={<Layout />}>
        <Route index element={<Home />} />
        <Route path="sign-in" element={<SignIn />} />
        <Route path="n/:ns" element={<NamespaceLayout />}>
          <Route index element={<NamespaceOverview />} />
          <Route path="repositories" element={<RepositoryList />} />
          <Route path="repositories/new" element={<NewRepository />} />
          <Route path="r/:repo" element={<RepositoryDetail />} />
          <Route path="r/:repo/lifecycle" element={<LifecyclePolicy />} />
          <Route path="r/:repo/images/*" element={<ImageDetail />} />
          <Route path="r/:repo/npm/*" element={<NpmPackageDetail />} />
          <Route path="r/:repo/maven/:groupId/:artifactId" element={<MavenPackageDetail />} />
          <Route path="r/:repo/maven/:groupId/:artifactId/:version" element={<MavenVersionDetail />} />
          <Route path="tokens" element={<AccessTokens />} />
          <Route path="gc" element={<GarbageCollection />} />
          <Route path="trash" element={<Trash />} />
          <Route path="lifecycle" element={<LifecyclePolicy />} />
          <Route path="history" element={<PublishHistory />} />
          <Route path="search" element={<ChecksumSearch />} />
        </Route>
        <Route path="*" element={<NotFound />} />
      </Route>
    </Routes>
  );
}

function WithClient() {
  const { ready, session, ended } = useAuth();
  const csrf = session.csrfToken ?? null;
  // A new client per session: nothing cached for one identity leaks to another.
  const client = useMemo(() => makeClient(csrf, ended), [csrf, ended]);
  // Until the server says whether the cookie signs in, queries would run
  // as anonymous and then again.
  if (!ready) return null;
  return (
    <Provider value={client}>
      <AppRoutes />
    </Provider>
  );
}

export function App() {
  return (
    <AuthProvider>
      <WithClient />
    </AuthProvider>
  );
}
