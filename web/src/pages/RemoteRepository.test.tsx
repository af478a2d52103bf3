import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { describe, expect, it, vi } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { opName } from "../test/mockClient";
import { NewRepository } from "./NewRepository";
import { formatRatio, RemotePanel, RemoteSettings } from "./RemoteRepository";

const remote = {
  __typename: "RemoteRepository",
  url: "https://registry.example.test",
  cacheValidityHours: 24,
  metadataCacheValidityHours: null as number | null,
  health: "UNHEALTHY",
  lastCheckedAt: "2026-11-02T10:00:00Z",
  lastError: "upstream unreachable" as string | null,
  hasCredentials: true,
  cacheHits: 3,
  cacheMisses: 1,
  hitRatio: 0.75,
};

const image = {
  __typename: "RemoteCachedImage",
  id: "img1",
  name: "library/alpine",
  cachedAt: "2026-11-01T10:00:00Z",
  lastDownloadedAt: "2026-11-02T09:00:00Z",
  manifestsCount: 2,
  blobsCount: 3,
  sizeBytes: 3 * 1024 * 1024,
  tags: [
    { __typename: "RemoteCachedTag", name: "3.20", digest: "sha256:" + "a".repeat(64), checkedAt: "2026-11-02T09:00:00Z", stale: false },
    { __typename: "RemoteCachedTag", name: "edge", digest: "sha256:" + "b".repeat(64), checkedAt: "2026-10-01T09:00:00Z", stale: true },
  ],
};

const npmRemote = {
  ...remote,
  url: "https://npm.example.test",
  metadataCacheValidityHours: 1,
  health: "HEALTHY",
  lastError: null,
  hasCredentials: false,
  cacheHits: 9,
  cacheMisses: 3,
  hitRatio: 0.75,
};

const packages = [
  {
    __typename: "RemoteCachedPackage",
    id: "p1",
    name: "@types/node",
    cachedVersions: 2,
    sizeBytes: 2048,
    lastDownloadedAt: "2026-11-02T09:00:00Z",
    checkedAt: "2026-11-02T09:30:00Z",
    stale: false,
  },
  {
    __typename: "RemoteCachedPackage",
    id: "p2",
    name: "left-pad",
    cachedVersions: 1,
    sizeBytes: 512,
    lastDownloadedAt: null,
    checkedAt: "1970-01-01T00:00:00Z",
    stale: true,
  },
];

// The server's state: a saved change shows in the next answer, as it would.
let current = { ...remote };

function respond(op: { query: unknown; variables?: unknown }) {
  const name = opName(op as never);
  switch (name) {
    case "RemoteRepository":
      return { data: { repository: { __typename: "Repository", id: "r1", remote: current } } };
    case "RemoteCachedImages":
      return {
        data: {
          repository: {
            __typename: "Repository",
            id: "r1",
            remote: { __typename: "RemoteRepository", cachedImages: connection("RemoteCachedImage", [image]) },
          },
        },
      };
    case "RemoteCachedPackages":
      return {
        data: { repository: { __typename: "Repository", id: "r1", remote: { __typename: "RemoteRepository", cachedPackages: packages } } },
      };
    case "InvalidateRemoteMetadata": {
      const pkg = (op.variables as { input: { package: string | null } }).input.package;
      return { data: { invalidateRemoteMetadata: { __typename: "InvalidateRemoteMetadataPayload", invalidatedCount: pkg ? 1 : 2 } } };
    }
    case "InvalidateRemoteTag":
      return { data: { invalidateRemoteTag: { __typename: "InvalidateRemoteTagPayload", image: "library/alpine", tag: "3.20" } } };
    case "EvictRemoteImage":
      return {
        data: {
          evictRemoteImage: { __typename: "EvictRemoteImagePayload", image: "library/alpine", releasedCount: 3, gcCandidateCount: 1 },
        },
      };
    case "UpdateRemoteRepository": {
      const r = (op.variables as { input: { remote: { cacheValidityHours?: number; metadataCacheValidityHours?: number } } }).input.remote;
      current = {
        ...current,
        cacheValidityHours: r.cacheValidityHours ?? current.cacheValidityHours,
        metadataCacheValidityHours: r.metadataCacheValidityHours ?? current.metadataCacheValidityHours,
      };
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
                cacheValidityHours: current.cacheValidityHours,
                metadataCacheValidityHours: current.metadataCacheValidityHours,
                hasCredentials: current.hasCredentials,
              },
            },
          },
        },
      };
    }
    case "CreateRepository":
      return {
        data: {
          createRepository: {
            __typename: "RepositoryPayload",
            repository: { __typename: "Repository", id: "r2", name: "hub", format: "DOCKER", kind: "REMOTE", visibility: "PRIVATE", description: null },
          },
        },
      };
  }
  return new Error("unexpected operation " + name);
}

describe("RemotePanel", () => {
  it("shows the upstream's health, hit ratio and cached images, and invalidates and evicts", async () => {
    current = { ...remote };
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(true);
    const { ops } = renderRoutes(
      "/n/acme/r/hub",
      <Route path="/n/:ns/r/:repo" element={<RemotePanel ns="acme" repo="hub" format="DOCKER" admin />} />,
      respond,
      { token: "t" },
    );
    expect(await screen.findByText("unhealthy")).toBeTruthy();
    expect(screen.getByText("upstream unreachable")).toBeTruthy();
    expect(screen.getByText("stored (encrypted)")).toBeTruthy();
    expect(screen.getByText("75.0 % (3 hits, 1 miss from the upstream)")).toBeTruthy();
    const row = (await screen.findByText("library/alpine")).closest("tr")!;
    expect(within(row).getByText("3.0 MiB")).toBeTruthy();
    expect(within(row).getByText("revalidates on next pull")).toBeTruthy();
    // A stale tag has no Invalidate button; a fresh one has.
    expect(within(row).queryByRole("button", { name: "Invalidate library/alpine:edge" })).toBeNull();
    await userEvent.click(within(row).getByRole("button", { name: "Invalidate library/alpine:3.20" }));
    await waitFor(() => expect(ops("InvalidateRemoteTag")).toHaveLength(1));
    expect(ops("InvalidateRemoteTag")[0].variables).toEqual({
      input: { namespace: "acme", repository: "hub", image: "library/alpine", tag: "3.20" },
    });
    expect(await screen.findByText("library/alpine:3.20 will be revalidated on its next pull.")).toBeTruthy();
    await userEvent.click(within(row).getByRole("button", { name: "Evict library/alpine" }));
    await waitFor(() => expect(ops("EvictRemoteImage")).toHaveLength(1));
    expect(confirm).toHaveBeenCalled();
    confirm.mockRestore();
  });

  it("shows an npm remote's cached packages and invalidates their metadata", async () => {
    current = { ...npmRemote };
    const { ops } = renderRoutes(
      "/n/acme/r/npmjs",
      <Route path="/n/:ns/r/:repo" element={<RemotePanel ns="acme" repo="npmjs" format="NPM" admin />} />,
      respond,
      { token: "t" },
    );
    expect(await screen.findByText("healthy")).toBeTruthy();
    expect(screen.getByText("75.0 % (9 hits, 3 misses from the upstream)")).toBeTruthy();
    expect(screen.getByText("1 h")).toBeTruthy();
    expect(screen.getByText("Metadata revalidated after")).toBeTruthy();
    expect(screen.queryByText("Tags revalidated after")).toBeNull();
    expect(screen.getByRole("heading", { name: "Cached packages" })).toBeTruthy();
    const fresh = (await screen.findByText("@types/node")).closest("tr")!;
    expect(within(fresh).getByText("2.0 KiB")).toBeTruthy();
    const stale = screen.getByText("left-pad").closest("tr")!;
    expect(within(stale).getByText("revalidates on next request")).toBeTruthy();
    // A stale packument has no Invalidate button; a fresh one has.
    expect(within(stale).queryByRole("button")).toBeNull();
    await userEvent.click(within(fresh).getByRole("button", { name: "Invalidate the metadata of @types/node" }));
    await waitFor(() => expect(ops("InvalidateRemoteMetadata")).toHaveLength(1));
    expect(ops("InvalidateRemoteMetadata")[0].variables).toEqual({
      input: { namespace: "acme", repository: "npmjs", package: "@types/node" },
    });
    expect(await screen.findByText("The packument of @types/node will be revalidated on its next request.")).toBeTruthy();
    await userEvent.click(screen.getByRole("button", { name: "Invalidate metadata" }));
    await waitFor(() => expect(ops("InvalidateRemoteMetadata")).toHaveLength(2));
    expect(ops("InvalidateRemoteMetadata")[1].variables).toEqual({ input: { namespace: "acme", repository: "npmjs", package: null } });
    expect(await screen.findByText("2 packuments will be revalidated on their next request.")).toBeTruthy();
    expect(ops("RemoteCachedImages")).toHaveLength(0);
  });

  it("offers no metadata invalidation to readers of an npm remote", async () => {
    current = { ...npmRemote };
    renderRoutes("/n/acme/r/npmjs", <Route path="/n/:ns/r/:repo" element={<RemotePanel ns="acme" repo="npmjs" format="NPM" admin={false} />} />, respond);
    const row = (await screen.findByText("@types/node")).closest("tr")!;
    expect(within(row).queryByRole("button")).toBeNull();
    expect(screen.queryByRole("button", { name: "Invalidate metadata" })).toBeNull();
  });

  it("offers no cache actions to readers", async () => {
    current = { ...remote };
    renderRoutes("/n/acme/r/hub", <Route path="/n/:ns/r/:repo" element={<RemotePanel ns="acme" repo="hub" format="DOCKER" admin={false} />} />, respond);
    const row = (await screen.findByText("library/alpine")).closest("tr")!;
    expect(within(row).queryByRole("button")).toBeNull();
  });

  it("formats the hit ratio", () => {
    expect(formatRatio(null)).toBe("–");
    expect(formatRatio(1)).toBe("100.0 %");
    expect(formatRatio(0.12345)).toBe("12.3 %");
  });
});

describe("RemoteSettings", () => {
  it("sends only what changed; new credentials need both fields", async () => {
    current = { ...remote };
    const { ops } = renderRoutes("/n/acme/r/hub", <Route path="/n/:ns/r/:repo" element={<RemoteSettings ns="acme" repo="hub" format="DOCKER" />} />, respond, {
      token: "t",
    });
    const hours = await screen.findByLabelText("Revalidate cached tags after (hours)");
    const save = screen.getByRole("button", { name: "Save upstream settings" }) as HTMLButtonElement;
    expect(save.disabled).toBe(true);
    await userEvent.clear(hours);
    await userEvent.type(hours, "6");
    await userEvent.type(screen.getByLabelText("New username"), "robot");
    expect(save.disabled).toBe(true); // a username without a password
    await userEvent.type(screen.getByLabelText("New password or token"), "s3cret");
    expect(save.disabled).toBe(false);
    await userEvent.click(save);
    await waitFor(() => expect(ops("UpdateRemoteRepository")).toHaveLength(1));
    expect(ops("UpdateRemoteRepository")[0].variables).toEqual({
      input: { namespace: "acme", name: "hub", remote: { cacheValidityHours: 6, username: "robot", password: "s3cret" } },
    });
    expect(await screen.findByText("Saved.")).toBeTruthy();
    expect((screen.getByLabelText("New password or token") as HTMLInputElement).value).toBe("");
  });

  it("changes an npm remote's metadata validity", async () => {
    current = { ...npmRemote };
    const { ops } = renderRoutes("/n/acme/r/npmjs", <Route path="/n/:ns/r/:repo" element={<RemoteSettings ns="acme" repo="npmjs" format="NPM" />} />, respond, {
      token: "t",
    });
    const hours = (await screen.findByLabelText("Revalidate cached metadata after (hours)")) as HTMLInputElement;
    expect(hours.value).toBe("1");
    expect(screen.queryByLabelText("Revalidate cached tags after (hours)")).toBeNull();
    const save = screen.getByRole("button", { name: "Save upstream settings" }) as HTMLButtonElement;
    await userEvent.clear(hours);
    await userEvent.type(hours, "8761");
    expect(save.disabled).toBe(true); // past the server's range
    await userEvent.clear(hours);
    await userEvent.type(hours, "0");
    expect(save.disabled).toBe(false);
    await userEvent.click(save);
    await waitFor(() => expect(ops("UpdateRemoteRepository")).toHaveLength(1));
    expect(ops("UpdateRemoteRepository")[0].variables).toEqual({
      input: { namespace: "acme", name: "npmjs", remote: { metadataCacheValidityHours: 0 } },
    });
    expect(await screen.findByText("Saved.")).toBeTruthy();
    expect(((await screen.findByLabelText("Revalidate cached metadata after (hours)")) as HTMLInputElement).value).toBe("0");
  });
});

describe("NewRepository", () => {
  it("creates a remote repository with its upstream settings", async () => {
    const { ops } = renderRoutes("/n/acme/repositories/new", <Route path="/n/:ns/repositories/new" element={<NewRepository />} />, respond, {
      token: "t",
    });
    await userEvent.type(await screen.findByLabelText("Name"), "hub");
    await userEvent.click(screen.getByRole("radio", { name: /remote/ }));
    const create = screen.getByRole("button", { name: "Create repository" }) as HTMLButtonElement;
    expect(create.disabled).toBe(true); // no URL yet
    await userEvent.type(screen.getByLabelText("Upstream registry URL"), "https://registry.example.test");
    await userEvent.type(screen.getByLabelText("Username (optional)"), "robot");
    expect(create.disabled).toBe(true);
    await userEvent.type(screen.getByLabelText("Password or token (optional)"), "tok");
    expect(create.disabled).toBe(false);
    await userEvent.click(create);
    await waitFor(() => expect(ops("CreateRepository")).toHaveLength(1));
    expect(ops("CreateRepository")[0].variables).toMatchObject({
      input: {
        namespace: "acme",
        name: "hub",
        format: "DOCKER",
        kind: "REMOTE",
        remote: { url: "https://registry.example.test", username: "robot", password: "tok", cacheValidityHours: 24 },
      },
    });
  });

  it("creates an npm remote with its metadata validity", async () => {
    const { ops } = renderRoutes("/n/acme/repositories/new", <Route path="/n/:ns/repositories/new" element={<NewRepository />} />, respond, {
      token: "t",
    });
    await userEvent.type(await screen.findByLabelText("Name"), "npmjs");
    await userEvent.click(screen.getByRole("radio", { name: /npm/ }));
    expect(screen.queryByLabelText("Upstream registry URL")).toBeNull();
    await userEvent.click(screen.getByRole("radio", { name: /remote/ }));
    await userEvent.type(screen.getByLabelText("Upstream registry URL"), "https://npm.example.test/");
    expect(screen.queryByLabelText("Revalidate cached tags after (hours)")).toBeNull();
    const hours = screen.getByLabelText("Revalidate cached metadata after (hours)") as HTMLInputElement;
    expect(hours.value).toBe("1");
    await userEvent.clear(hours);
    await userEvent.type(hours, "6");
    await userEvent.click(screen.getByRole("button", { name: "Create repository" }));
    await waitFor(() => expect(ops("CreateRepository")).toHaveLength(1));
    expect(ops("CreateRepository")[0].variables).toEqual({
      input: {
        namespace: "acme",
        name: "npmjs",
        format: "NPM",
        kind: "REMOTE",
        visibility: "PRIVATE",
        description: null,
        remote: { url: "https://npm.example.test/", username: null, password: null, metadataCacheValidityHours: 6 },
        virtual: null,
      },
    });
  });
});
