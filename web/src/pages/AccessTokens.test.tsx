import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { describe, expect, it, vi } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { opName } from "../test/mockClient";
import { AccessTokens, parseRepositoryList, tokenState } from "./AccessTokens";

const token = (id: string, name: string, extra: object = {}) => ({
  __typename: "AccessToken",
  id,
  name,
  scopes: ["READ"],
  repositories: null,
  expiresAt: null,
  revokedAt: null,
  lastUsedAt: null,
  createdAt: "2026-11-01T00:00:00Z",
  ...extra,
});

describe("AccessTokens", () => {
  it("shows a new token's secret once, and sends scopes, repositories and expiry", async () => {
    const user = userEvent.setup();
    const { ops } = renderRoutes(
      "/n/acme/tokens",
      <Route path="/n/:ns/tokens" element={<AccessTokens />} />,
      (op) =>
        opName(op) === "CreateAccessToken"
          ? {
              data: {
                createAccessToken: {
                  __typename: "CreateAccessTokenPayload",
                  secret: "arp_secret_value",
                  token: { ...token("t9", "deployer"), scopes: ["READ", "WRITE"], expiresAt: "2027-01-01T00:00:00Z" },
                },
              },
            }
          : { data: { accessTokens: connection("AccessToken", []) } },
      { token: "admin" },
    );
    await screen.findByText("No token yet.");
    await user.type(screen.getByLabelText("Name"), "deployer");
    await user.click(screen.getByRole("checkbox", { name: /write/ }));
    await user.type(screen.getByLabelText("Repositories (optional)"), "web, libs web");
    await user.type(screen.getByLabelText(/Valid through/), "2026-12-31");
    await user.click(screen.getByRole("button", { name: "Create token" }));
    const region = await screen.findByRole("region", { name: "New token secret" });
    expect(within(region).getByText("arp_secret_value")).toBeTruthy();
    expect(ops("CreateAccessToken")[0].variables).toEqual({
      input: {
        namespace: "acme",
        name: "deployer",
        scopes: ["READ", "WRITE"],
        repositories: ["web", "libs"],
        expiresAt: "2027-01-01T00:00:00.000Z",
      },
    });
    // The form is cleared, and the secret goes away for good on Done.
    expect((screen.getByLabelText("Name") as HTMLInputElement).value).toBe("");
    await user.click(within(region).getByRole("button", { name: "Done, hide the secret" }));
    expect(screen.queryByText("arp_secret_value")).toBeNull();
  });

  it("revokes a token by id after confirmation", async () => {
    const user = userEvent.setup();
    const confirm = vi.spyOn(window, "confirm").mockReturnValue(true);
    const { ops } = renderRoutes(
      "/n/acme/tokens",
      <Route path="/n/:ns/tokens" element={<AccessTokens />} />,
      (op) =>
        opName(op) === "RevokeAccessToken"
          ? { data: { revokeAccessToken: { __typename: "AccessTokenPayload", token: { __typename: "AccessToken", id: "t1", revokedAt: "2026-11-02T00:00:00Z" } } } }
          : {
              data: {
                accessTokens: connection("AccessToken", [
                  token("t1", "ci", { scopes: ["READ", "WRITE"], repositories: [{ __typename: "Repository", id: "r", name: "web" }] }),
                  token("t2", "old", { expiresAt: "2020-01-01T00:00:00Z" }),
                ]),
              },
            },
      { token: "admin" },
    );
    const row = (await screen.findByText("ci")).closest("tr")!;
    expect(within(row).getByText("web")).toBeTruthy();
    expect(within(screen.getByText("old").closest("tr")!).getByText("expired")).toBeTruthy();
    await user.click(within(row).getByRole("button", { name: "Revoke token ci" }));
    expect(confirm).toHaveBeenCalled();
    await waitFor(() => expect(ops("RevokeAccessToken")[0]?.variables).toEqual({ input: { namespace: "acme", id: "t1" } }));
    confirm.mockRestore();
  });

  it("asks for revoked tokens through the URL", async () => {
    const user = userEvent.setup();
    const { ops } = renderRoutes("/n/acme/tokens", <Route path="/n/:ns/tokens" element={<AccessTokens />} />, () => ({
      data: { accessTokens: connection("AccessToken", []) },
    }));
    await screen.findByText("No token yet.");
    await user.click(screen.getByRole("checkbox", { name: "Show revoked tokens" }));
    await waitFor(() => expect(screen.getByTestId("location").textContent).toBe("/n/acme/tokens?revoked=1"));
    await waitFor(() => expect(ops("AccessTokens").at(-1)?.variables).toMatchObject({ includeRevoked: true }));
  });
});

describe("token helpers", () => {
  it("reads a repository list, or null for every repository", () => {
    expect(parseRepositoryList(" web,libs  web ")).toEqual(["web", "libs"]);
    expect(parseRepositoryList(" , ")).toBeNull();
  });

  it("tells active, expired and revoked tokens apart", () => {
    const now = Date.parse("2026-11-01T00:00:00Z");
    expect(tokenState({}, now)).toBe("active");
    expect(tokenState({ expiresAt: "2026-12-01T00:00:00Z" }, now)).toBe("active");
    expect(tokenState({ expiresAt: "2026-10-01T00:00:00Z" }, now)).toBe("expired");
    expect(tokenState({ revokedAt: "2026-10-01T00:00:00Z", expiresAt: "2026-10-01T00:00:00Z" }, now)).toBe("revoked");
  });
});
