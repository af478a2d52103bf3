// Every screen has a route; these build the shareable URLs.
const enc = encodeURIComponent;

export const paths = {
  home: () => "/",
  signIn: (next?: string) => (next && next !== "/" ? `/sign-in?next=${enc(next)}` : "/sign-in"),
  namespace: (ns: string) => `/n/${enc(ns)}`,
  repositories: (ns: string, search = "") => `/n/${enc(ns)}/repositories${search ? `?${search}` : ""}`,
  newRepository: (ns: string) => `/n/${enc(ns)}/repositories/new`,
  repository: (ns: string, repo: string) => `/n/${enc(ns)}/r/${enc(repo)}`,
  image: (ns: string, repo: string, image: string, manifest?: string) =>
    `/n/${enc(ns)}/r/${enc(repo)}/images/${image.split("/").map(enc).join("/")}` +
    (manifest ? `?manifest=${enc(manifest)}` : ""),
  npmPackage: (ns: string, repo: string, pkg: string, version?: string) =>
    `/n/${enc(ns)}/r/${enc(repo)}/npm/${pkg.split("/").map(enc).join("/")}` + (version ? `?version=${enc(version)}` : ""),
  mavenPackage: (ns: string, repo: string, groupId: string, artifactId: string) =>
    `/n/${enc(ns)}/r/${enc(repo)}/maven/${enc(groupId)}/${enc(artifactId)}`,
  mavenVersion: (ns: string, repo: string, groupId: string, artifactId: string, version: string) =>
    `/n/${enc(ns)}/r/${enc(repo)}/maven/${enc(groupId)}/${enc(artifactId)}/${enc(version)}`,
  tokens: (ns: string) => `/n/${enc(ns)}/tokens`,
  gc: (ns: string) => `/n/${enc(ns)}/gc`,
  trash: (ns: string) => `/n/${enc(ns)}/trash`,
  lifecycle: (ns: string, repo?: string) =>
    repo ? `/n/${enc(ns)}/r/${enc(repo)}/lifecycle` : `/n/${enc(ns)}/lifecycle`,
  history: (ns: string) => `/n/${enc(ns)}/history`,
  search: (ns: string, sha256?: string) => `/n/${enc(ns)}/search${sha256 ? `?sha256=${enc(sha256)}` : ""}`,
};
