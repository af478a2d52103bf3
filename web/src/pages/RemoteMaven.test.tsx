import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { beforeEach, describe, expect, it } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { opName } from "../test/mockClient";
import { RemotePanel, RemoteSettings } from "./RemoteRepository";

const remote = {
  __typename: "RemoteRepository",
  url: "https://repo.example.test/maven2",
  cacheValidityHours: 24,
  metadataCacheValidityHours: 1,
  negativeCacheMinutes: 15,
  health: "HEALTHY",
  lastCheckedAt: "2026-11-02T10:00:00Z",
  lastError: null,
  hasCredentials: false,
  cacheHits: 9,
  cacheMisses: 1,
  hitRatio: 0.9,
};

const pkg = {
  __typename: "RemoteCachedMavenPackage",
  id: "p1",
  groupId: "org.apache.commons",
  artifactId: "commons-text",
  cachedAt: "2026-11-01T10:00:00Z",
  lastDownloadedAt: "2026-11-02T09:00:00Z",
  sizeBytes: 2 * 1024 * 1024,
  versions: [{ __typename: "RemoteCachedMavenVersion", version: "1.10.0", sizeBytes: 2 * 1024 * 1024, filesCount: 2 }],
};

let current = { ...remote };
// Every test starts from the same settings, whichever ran before it.
beforeEach(() => {
  current = { ...remote };
});

function respond(op: { query: unknown; variables?: unknown }) {
  const name = opName(op as never);
  switch (name) {
    case "RemoteRepository":
      return { data: { repository: { __typename: "Repository", id: "r1", remote: current } } };
    case "RemoteCachedMavenPackages":
      return {
        data: {
          repository: {
            __typename: "Repository",
            id: "r1",
            remote: { __typename: "RemoteRepository", cachedMavenPackages: connection("RemoteCachedMavenPackage", [pkg]) },
          },
        },
      };
    case "InvalidateRemoteMavenMetadata":
      return { data: { invalidateRemoteMavenMetadata: { __typename: "InvalidateRemoteMavenMetadataPayload", invalidatedCount: 1 } } };
    case "UpdateRemoteRepository": {
      const r = (op.variables as { input: { remote: { metadataCacheValidityHours?: number } } }).input.remote;
      current = { ...current, metadataCacheValidityHours: r.metadataCacheValidityHours ?? current.metadataCacheValidityHours };
      return {
        data: {
          updateRepository: {
            __typename: "RepositoryPayload",
            repository: {
              __typename: "Repository",
              id: "r1",
              remote: {
                __typename: "RemoteRepository",
                url: current.url,
                cacheValidityHours: 24,
                metadataCacheValidityHours: current.metadataCacheValidityHours,
                hasCredentials: false,
              },
            },
          },
        },
      };
    }
  }
  return new Error("unexpected operation " + name);
}

describe("RemotePanel of a Maven proxy", () => {
  it("shows the upstream, hit ratio and cached packages, and invalidates metadata", async () => {
    const { ops } = renderRoutes(
      "/n/acme/r/central",
      <Route path="/n/:ns/r/:repo" element={<RemotePanel ns="acme" repo="central" admin format="MAVEN" />} />,
      respond,
      { token: "t" },
    );
    expect(await screen.findByText("healthy")).toBeTruthy();
    expect(screen.getByText("1 h (release files never: they are immutable)")).toBeTruthy();
    expect(screen.getByText("15 min")).toBeTruthy();
    expect(screen.getByText("90.0 % (9 hits, 1 miss from the upstream)")).toBeTruthy();
    expect(screen.queryByText("Cached images")).toBeNull();
    const row = (await screen.findByText("org.apache.commons:commons-text")).closest("tr")!;
    expect(within(row).getByText("1.10.0")).toBeTruthy();
    expect(within(row).getByText("2.0 MiB")).toBeTruthy();
    await userEvent.click(within(row).getByRole("button", { name: "Invalidate the metadata of org.apache.commons:commons-text" }));
    await waitFor(() => expect(ops("InvalidateRemoteMavenMetadata")).toHaveLength(1));
    expect(ops("InvalidateRemoteMavenMetadata")[0].variables).toEqual({
      input: { namespace: "acme", repository: "central", groupId: "org.apache.commons", artifactId: "commons-text" },
    });
    expect(await screen.findByText("1 cached document of org.apache.commons:commons-text will be revalidated on their next request.")).toBeTruthy();
    await userEvent.click(screen.getByRole("button", { name: "Invalidate all metadata" }));
    await waitFor(() => expect(ops("InvalidateRemoteMavenMetadata")).toHaveLength(2));
    expect(ops("InvalidateRemoteMavenMetadata")[1].variables).toEqual({ input: { namespace: "acme", repository: "central" } });
  });

  it("offers no cache actions to readers", async () => {
    renderRoutes(
      "/n/acme/r/central",
      <Route path="/n/:ns/r/:repo" element={<RemotePanel ns="acme" repo="central" admin={false} format="MAVEN" />} />,
      respond,
    );
    const row = (await screen.findByText("org.apache.commons:commons-text")).closest("tr")!;
    expect(within(row).queryByRole("button")).toBeNull();
    expect(screen.queryByRole("button", { name: "Invalidate all metadata" })).toBeNull();
  });
});

describe("RemoteSettings of a Maven proxy", () => {
  it("changes the metadata validity", async () => {
    const { ops } = renderRoutes(
      "/n/acme/r/central",
      <Route path="/n/:ns/r/:repo" element={<RemoteSettings ns="acme" repo="central" format="MAVEN" />} />,
      respond,
      { token: "t" },
    );
    const hours = await screen.findByLabelText("Revalidate cached metadata after (hours)");
    await userEvent.clear(hours);
    await userEvent.type(hours, "0");
    await userEvent.click(screen.getByRole("button", { name: "Save upstream settings" }));
    await waitFor(() => expect(ops("UpdateRemoteRepository")).toHaveLength(1));
    expect(ops("UpdateRemoteRepository")[0].variables).toEqual({
      input: { namespace: "acme", name: "central", remote: { metadataCacheValidityHours: 0 } },
    });
    expect(await screen.findByText("Saved.")).toBeTruthy();
  });

  it("changes how long missing paths are remembered, within 0 to 1440 minutes", async () => {
    const { ops } = renderRoutes(
      "/n/acme/r/central",
      <Route path="/n/:ns/r/:repo" element={<RemoteSettings ns="acme" repo="central" format="MAVEN" />} />,
      respond,
      { token: "t" },
    );
    const neg = await screen.findByLabelText("Remember missing paths for (minutes)");
    const save = screen.getByRole("button", { name: "Save upstream settings" });
    await userEvent.clear(neg);
    await userEvent.type(neg, "1441");
    expect((save as HTMLButtonElement).disabled).toBe(true);
    await userEvent.clear(neg);
    await userEvent.type(neg, "30");
    await userEvent.click(save);
    await waitFor(() => expect(ops("UpdateRemoteRepository")).toHaveLength(1));
    expect(ops("UpdateRemoteRepository")[0].variables).toEqual({
      input: { namespace: "acme", name: "central", remote: { negativeCacheMinutes: 30 } },
    });
  });
});
