import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { describe, expect, it, vi } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { opName, type Responder } from "../test/mockClient";
import { GarbageCollection } from "./GarbageCollection";

const digest = "sha256:" + "cd".repeat(32);

function server(reclaim: object | null): Responder {
  return (op) => {
    switch (opName(op)) {
      case "GarbageCollectionStatus":
        return {
          data: {
            namespace: {
              __typename: "Namespace",
              id: "ns",
              gcQueue: {
                __typename: "GCQueue",
                tracked: 12,
                due: 3,
                oldestDueAgeSeconds: 7200,
                excluded: 1,
                lastReclaimedAt: "2026-11-01T12:00:00Z",
                reclaim,
              },
            },
          },
        };
      case "ExcludedGcCandidates":
        return {
          data: {
            excludedGcCandidates: connection("GCCandidate", [
              {
                __typename: "GCCandidate",
                digest,
                reviewAfter: "2026-10-01T00:00:00Z",
                attempts: 9,
                strikes: 5,
                excludedAt: "2026-10-30T00:00:00Z",
                lastError: "storage: permission denied",
                createdAt: "2026-09-30T00:00:00Z",
              },
            ]),
          },
        };
      case "SetGarbageCollection":
        return {
          data: {
            setGarbageCollection: {
              __typename: "GarbageCollectionPayload",
              garbageCollection: { __typename: "GarbageCollection", enabled: false, changedBy: "admin", reason: "migration", updatedAt: "2026-11-02T00:00:00Z" },
            },
          },
        };
      case "RequeueGcCandidate":
        return { data: { requeueGcCandidate: { __typename: "GCCandidatePayload", candidate: { __typename: "GCCandidate", digest, excludedAt: null, strikes: 0 } } } };
    }
    return new Error("unexpected " + opName(op));
  };
}

describe("GarbageCollection", () => {
  it("stops deletion with a reason, after confirmation", async () => {
    const user = userEvent.setup();
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(true);
    const { ops } = renderRoutes(
      "/n/acme/gc",
      <Route path="/n/:ns/gc" element={<GarbageCollection />} />,
      server({ __typename: "GarbageCollection", enabled: true, changedBy: null, reason: null, updatedAt: "2026-10-01T00:00:00Z" }),
      { token: "admin" },
    );
    const sw = await screen.findByTestId("kill-switch");
    expect(within(sw).getByText("deleting")).toBeTruthy();
    expect(screen.getByText("2 h")).toBeTruthy();
    await user.type(within(sw).getByLabelText(/Reason/), "migration");
    await user.click(within(sw).getByRole("button", { name: "Stop deleting" }));
    await waitFor(() => expect(ops("SetGarbageCollection")[0]?.variables).toEqual({ enabled: false, reason: "migration" }));
    expect(confirm).toHaveBeenCalled();
    confirm.mockRestore();
  });

  it("does not change the switch when the confirmation is declined", async () => {
    const user = userEvent.setup();
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(false);
    const { ops } = renderRoutes(
      "/n/acme/gc",
      <Route path="/n/:ns/gc" element={<GarbageCollection />} />,
      server({ __typename: "GarbageCollection", enabled: false, changedBy: "admin", reason: "incident", updatedAt: "2026-10-01T00:00:00Z" }),
      { token: "admin" },
    );
    const sw = await screen.findByTestId("kill-switch");
    expect(within(sw).getByText("stopped")).toBeTruthy();
    expect(within(sw).getByText("incident")).toBeTruthy();
    await user.click(within(sw).getByRole("button", { name: "Resume deleting" }));
    expect(ops("SetGarbageCollection")).toHaveLength(0);
    confirm.mockRestore();
  });

  it("hides the switch from namespace tokens and requeues an excluded candidate", async () => {
    const user = userEvent.setup();
    const { ops } = renderRoutes("/n/acme/gc", <Route path="/n/:ns/gc" element={<GarbageCollection />} />, server(null), {
      token: "ns-token",
    });
    await screen.findByText(/Only the admin token sees and sets/);
    expect(screen.queryByTestId("kill-switch")).toBeNull();
    const row = (await screen.findByText("storage: permission denied")).closest("tr")!;
    await user.click(within(row).getByRole("button", { name: /Requeue/ }));
    await waitFor(() => expect(ops("RequeueGcCandidate")[0]?.variables).toEqual({ input: { namespace: "acme", digest } }));
  });
});
