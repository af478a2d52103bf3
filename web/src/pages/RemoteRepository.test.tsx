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
  health: "UNHEALTHY",
  lastCheckedAt: "2026-11-02T10:00:00Z",
  lastError: "upstream unreachable",
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
    case "InvalidateRemoteTag":
      return { data: { invalidateRemoteTag: { __typename: "InvalidateRemoteTagPayload", image: "library/alpine", tag: "3.20" } } };
    case "EvictRemoteImage":
      return {
        data: {
          evictRemoteImage: { __typename: "EvictRemoteImagePayload", image: "library/alpine", releasedCount: 3, gcCandidateCount: 1 },
        },
      };
    case "UpdateRemoteRepository": {
      const r = (op.variables as { input: { remote: { cacheValidityHours?: number } } }).input.remote;
      current = { ...current, cacheValidityHours: r.cacheValidityHours ?? current.cacheValidityHours };
      return {
        data: {
          updateRepository: {
            __typename: "RepositoryPayload",
            repository: {
              __typename: "Repository",
              id: "r1",
              remote: { __typename: "RemoteRepository", url: current.url, cacheValidityHours: current.cacheValidityHours, hasCredentials: true },
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
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(true);
    const { ops } = renderRoutes(
      "/n/acme/r/hub",
      <Route path="/n/:ns/r/:repo" element={<RemotePanel ns="acme" repo="hub" admin />} />,
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

  it("offers no cache actions to readers", async () => {
    renderRoutes("/n/acme/r/hub", <Route path="/n/:ns/r/:repo" element={<RemotePanel ns="acme" repo="hub" admin={false} />} />, respond);
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
    const { ops } = renderRoutes("/n/acme/r/hub", <Route path="/n/:ns/r/:repo" element={<RemoteSettings ns="acme" repo="hub" />} />, respond, {
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

  it("offers remote only for container formats", async () => {
    renderRoutes("/n/acme/repositories/new", <Route path="/n/:ns/repositories/new" element={<NewRepository />} />, respond, { token: "t" });
    await userEvent.click(await screen.findByRole("radio", { name: /npm/ }));
    expect((screen.getByRole("radio", { name: /remote/ }) as HTMLInputElement).disabled).toBe(true);
    expect(screen.queryByLabelText("Upstream registry URL")).toBeNull();
  });
});
