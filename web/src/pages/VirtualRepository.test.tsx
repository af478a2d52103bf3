import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { beforeEach, describe, expect, it } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { opName } from "../test/mockClient";
import { NewRepository } from "./NewRepository";
import {
  draftOk,
  emptyVirtual,
  moveUpstream,
  patternOk,
  removeUpstream,
  reservedList,
  ruleFields,
  virtualInput,
  VirtualPanel,
  VirtualSettings,
  type VirtualDraft,
} from "./VirtualRepository";

const repo = (id: string, name: string, kind: string) => ({ __typename: "Repository", id, name, kind });

const candidates = [repo("h1", "internal", "HOSTED"), repo("r1", "hub", "REMOTE"), repo("h2", "team", "HOSTED"), repo("v1", "all", "VIRTUAL")];

const initial = {
  __typename: "VirtualRepository",
  reservedPatterns: ["acme/*"],
  deployTo: { __typename: "Repository", id: "h1", name: "internal" },
  upstreams: [
    { __typename: "VirtualUpstream", position: 1, repository: repo("h1", "internal", "HOSTED"), rules: [] },
    {
      __typename: "VirtualUpstream",
      position: 2,
      repository: repo("r1", "hub", "REMOTE"),
      rules: [{ __typename: "VirtualRule", type: "ALLOW", field: "NAME", pattern: "library/**" }],
    },
  ],
};
let current = initial;
// Every test starts from the same settings, whichever ran before it.
beforeEach(() => {
  current = initial;
});

function respond(op: { query: unknown; variables?: unknown }) {
  const name = opName(op as never);
  switch (name) {
    case "VirtualRepository":
      return { data: { repository: { __typename: "Repository", id: "v1", format: "OCI", virtual: current } } };
    case "VirtualResolve": {
      const v = op.variables as { artifact: string; version: string | null };
      const step = (position: number, r: ReturnType<typeof repo> | null, outcome: string, extra = {}) => ({
        __typename: "VirtualResolutionStep",
        position,
        hidden: r === null,
        kind: r ? r.kind : null,
        outcome,
        repository: r,
        deniedField: null,
        deniedBy: null,
        reservedPattern: null,
        via: r,
        ...extra,
      });
      const served = v.artifact === "library/alpine";
      return {
        data: {
          repository: {
            __typename: "Repository",
            id: "v1",
            virtual: {
              __typename: "VirtualRepository",
              resolve: {
                __typename: "VirtualResolution",
                resolvedFrom: served ? repo("r1", "hub", "REMOTE") : null,
                resolvedPosition: served ? 2 : null,
                asksUpstream: false,
                steps: served
                  ? [step(1, repo("h1", "internal", "HOSTED"), "ABSENT"), step(2, repo("r1", "hub", "REMOTE"), "SERVES"), step(3, null, "SKIPPED")]
                  : [
                      step(1, repo("h1", "internal", "HOSTED"), "ABSENT"),
                      step(2, repo("r1", "hub", "REMOTE"), "RESERVED", { reservedPattern: "acme/*" }),
                      step(3, null, "HIDDEN"),
                    ],
              },
            },
          },
        },
      };
    }
    case "VirtualCandidates":
      return { data: { namespace: { __typename: "Namespace", id: "n1", repositories: connection("Repository", candidates) } } };
    case "UpdateVirtual": {
      const v = (op.variables as { input: { virtual: { upstreams: { repository: string }[]; deployTo: string | null } } }).input.virtual;
      current = {
        ...current,
        deployTo: v.deployTo ? { __typename: "Repository", id: "h1", name: v.deployTo } : (null as never),
        upstreams: v.upstreams.map((u, i) => ({
          __typename: "VirtualUpstream",
          position: i + 1,
          repository: candidates.find((c) => c.name === u.repository)!,
          rules: [],
        })),
      };
      return { data: { updateRepository: { __typename: "RepositoryPayload", repository: { __typename: "Repository", id: "v1", virtual: current } } } };
    }
    case "CreateRepository":
      return {
        data: {
          createRepository: {
            __typename: "RepositoryPayload",
            repository: { __typename: "Repository", id: "v2", name: "all", format: "OCI", kind: "VIRTUAL", visibility: "PRIVATE", description: null },
          },
        },
      };
  }
  return new Error("unexpected operation " + name);
}

const draft: VirtualDraft = {
  upstreams: [
    { repository: "internal", kind: "HOSTED", rules: [] },
    { repository: "hub", kind: "REMOTE", rules: [{ type: "DENY", field: "VERSION", pattern: "*-rc*" }] },
  ],
  deployTo: "internal",
  reserved: "acme/*\n\n  @acme/*  \n",
};

describe("virtual drafts", () => {
  it("checks patterns and drafts as the server does", () => {
    expect(patternOk("library/**")).toBe(true);
    expect(patternOk("")).toBe(false);
    expect(patternOk("a b")).toBe(false);
    expect(patternOk("a".repeat(256))).toBe(false);
    expect(reservedList(draft.reserved)).toEqual(["acme/*", "@acme/*"]);
    expect(draftOk(draft)).toBe(true);
    expect(draftOk(emptyVirtual)).toBe(false);
    expect(draftOk({ ...draft, deployTo: "hub" })).toBe(false); // a remote takes no writes
    expect(draftOk({ ...draft, reserved: "a b" })).toBe(false);
    expect(ruleFields("NPM")).toContain("SCOPE");
    expect(ruleFields("MAVEN")).toContain("ARTIFACT_ID");
    expect(ruleFields("OCI")).toEqual(["NAME", "VERSION"]);
  });

  it("moves and removes upstreams; removing the deploy target clears it", () => {
    expect(moveUpstream(draft, 1, -1).upstreams.map((u) => u.repository)).toEqual(["hub", "internal"]);
    expect(moveUpstream(draft, 0, -1)).toBe(draft);
    const removed = removeUpstream(draft, 0);
    expect(removed.upstreams.map((u) => u.repository)).toEqual(["hub"]);
    expect(removed.deployTo).toBe("");
    expect(virtualInput(draft)).toEqual({
      upstreams: [
        { repository: "internal", rules: [] },
        { repository: "hub", rules: [{ type: "DENY", field: "VERSION", pattern: "*-rc*" }] },
      ],
      deployTo: "internal",
      reservedPatterns: ["acme/*", "@acme/*"],
    });
  });
});

describe("VirtualPanel", () => {
  it("shows the resolution order, rules, deploy target and reserved names", async () => {
    renderRoutes("/n/acme/r/all", <Route path="/n/:ns/r/:repo" element={<VirtualPanel ns="acme" repo="all" />} />, respond);
    const row = (await screen.findByRole("link", { name: "hub" })).closest("tr")!;
    expect(within(row).getByText("allow name library/**")).toBeTruthy();
    expect(within(row).getByText("2")).toBeTruthy();
    const first = screen.getByRole("link", { name: "internal" }).closest("tr")!;
    expect(within(first).getByText("deploy target")).toBeTruthy();
    expect(within(first).getByText("everything")).toBeTruthy();
    expect(screen.getByText("acme/*")).toBeTruthy();
  });
});

describe("Resolve box", () => {
  it("shows where a name resolves from, why per member, and marks the upstream", async () => {
    renderRoutes("/n/acme/r/all", <Route path="/n/:ns/r/:repo" element={<VirtualPanel ns="acme" repo="all" format="OCI" />} />, respond);
    const user = userEvent.setup();
    await user.type(await screen.findByLabelText("Name"), "library/alpine");
    await user.type(screen.getByLabelText("Version (optional)"), "3.20");
    await user.click(screen.getByRole("button", { name: "Resolve" }));
    const answer = await screen.findByTestId("resolution-answer");
    expect(answer.textContent).toContain("library/alpine 3.20 resolves from hub (remote, member 2)");
    expect(screen.getByText("Has a cached copy, and its rules admit it.")).toBeTruthy();
    expect(screen.getByText("Not consulted: an earlier upstream serves it.")).toBeTruthy();
    // The badge is the panel's copy of the answer, handed up by an effect
    // after the box renders: it follows a render later (on a loaded
    // machine, after the answer is already on screen).
    expect(await screen.findByText("resolved from here")).toBeTruthy();

    await user.clear(screen.getByLabelText("Name"));
    await user.type(screen.getByLabelText("Name"), "acme/<b>x</b>");
    await user.click(screen.getByRole("button", { name: "Resolve" }));
    await waitFor(() => expect(screen.getByTestId("resolution-answer").textContent).toContain("No member serves acme/<b>x</b> 3.20"));
    expect(screen.getByText("Not asked: the name matches the reserved pattern “acme/*”.")).toBeTruthy();
    expect(screen.getByText("An upstream you may not read.")).toBeTruthy();
    await waitFor(() => expect(screen.queryByText("resolved from here")).toBeNull());
  });
});

describe("VirtualSettings", () => {
  it("reorders, adds and saves the whole list", async () => {
    const { ops } = renderRoutes(
      "/n/acme/r/all",
      <Route path="/n/:ns/r/:repo" element={<VirtualSettings ns="acme" repo="all" format="OCI" />} />,
      respond,
      { token: "t" },
    );
    const save = (await screen.findByRole("button", { name: "Save upstreams" })) as HTMLButtonElement;
    expect(save.disabled).toBe(true);
    await userEvent.click(screen.getByRole("button", { name: "Move hub up" }));
    expect(save.disabled).toBe(false);
    // The picker offers the others, never the virtual itself.
    const add = screen.getByLabelText("Add an upstream");
    expect(within(add).queryByText(/^all /)).toBeNull();
    await userEvent.selectOptions(add, "team");
    await userEvent.click(screen.getByRole("button", { name: "Add" }));
    await userEvent.click(screen.getByRole("button", { name: "Add rule to team" }));
    const pattern = screen.getByLabelText("Rule 1 of team: pattern");
    expect(save.disabled).toBe(true); // an empty pattern
    await userEvent.type(pattern, "team/*");
    await userEvent.selectOptions(screen.getByLabelText("Rule 1 of team: type"), "DENY");
    await userEvent.click(save);
    await waitFor(() => expect(ops("UpdateVirtual")).toHaveLength(1));
    expect(ops("UpdateVirtual")[0].variables).toEqual({
      input: {
        namespace: "acme",
        name: "all",
        virtual: {
          upstreams: [
            { repository: "hub", rules: [{ type: "ALLOW", field: "NAME", pattern: "library/**" }] },
            { repository: "internal", rules: [] },
            { repository: "team", rules: [{ type: "DENY", field: "NAME", pattern: "team/*" }] },
          ],
          deployTo: "internal",
          reservedPatterns: ["acme/*"],
        },
      },
    });
    expect(await screen.findByText("Saved.")).toBeTruthy();
  });
});

describe("NewRepository (virtual)", () => {
  it("creates a virtual repository with ordered upstreams and a deploy target", async () => {
    const { ops } = renderRoutes("/n/acme/repositories/new", <Route path="/n/:ns/repositories/new" element={<NewRepository />} />, respond, {
      token: "t",
    });
    await userEvent.type(await screen.findByLabelText("Name"), "everything");
    await userEvent.click(screen.getByRole("radio", { name: /oci/ }));
    await userEvent.click(screen.getByRole("radio", { name: /virtual/ }));
    const create = screen.getByRole("button", { name: "Create repository" }) as HTMLButtonElement;
    expect(create.disabled).toBe(true); // no upstream yet
    const add = await screen.findByLabelText("Add an upstream");
    await waitFor(() => expect(within(add).getByText("hub (remote)")).toBeTruthy());
    await userEvent.selectOptions(add, "hub");
    await userEvent.click(screen.getByRole("button", { name: "Add" }));
    await userEvent.selectOptions(add, "internal");
    await userEvent.click(screen.getByRole("button", { name: "Add" }));
    await userEvent.click(screen.getByRole("button", { name: "Move internal up" }));
    await userEvent.selectOptions(screen.getByLabelText("Deploy target"), "internal");
    await userEvent.type(screen.getByLabelText("Reserved names (one pattern per line)"), "acme/*");
    expect(create.disabled).toBe(false);
    await userEvent.click(create);
    await waitFor(() => expect(ops("CreateRepository")).toHaveLength(1));
    expect(ops("CreateRepository")[0].variables).toMatchObject({
      input: {
        namespace: "acme",
        name: "everything",
        format: "OCI",
        kind: "VIRTUAL",
        remote: null,
        virtual: {
          upstreams: [
            { repository: "internal", rules: [] },
            { repository: "hub", rules: [] },
          ],
          deployTo: "internal",
          reservedPatterns: ["acme/*"],
        },
      },
    });
  });
});
