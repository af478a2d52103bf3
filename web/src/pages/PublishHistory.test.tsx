import { screen, within } from "@testing-library/react";
import { Route } from "react-router";
import { describe, expect, it } from "vitest";
import { connection, renderRoutes } from "../test/render";
import { PublishHistory, dayEnd, dayStart } from "./PublishHistory";

const repo = (name: string, format: string) => ({ __typename: "Repository", id: `r-${name}`, name, format });

describe("PublishHistory", () => {
  it("shows container, npm and Maven publications", async () => {
    const events = [
      {
        __typename: "PublishEvent",
        publishedAt: "2026-11-04T10:00:00Z",
        cached: true,
        repository: repo("npmjs", "NPM"),
        artifact: { __typename: "CachedArtifact", id: "cv", name: "@types/node", reference: "22.1.0" },
      },
      {
        __typename: "PublishEvent",
        publishedAt: "2026-11-03T12:00:00Z",
        cached: true,
        repository: repo("hub", "DOCKER"),
        artifact: { __typename: "CachedArtifact", id: "cm", name: "library/alpine", reference: "sha256:" + "cd".repeat(32) },
      },
      {
        __typename: "PublishEvent",
        publishedAt: "2026-11-03T10:00:00Z",
        cached: false,
        repository: repo("web", "NPM"),
        artifact: { __typename: "NpmVersion", id: "nv", packageName: "left-pad", version: "1.3.0", sizeBytes: 1500, softDeletedAt: null },
      },
      {
        __typename: "PublishEvent",
        publishedAt: "2026-11-02T10:00:00Z",
        cached: false,
        repository: repo("libs", "MAVEN"),
        artifact: {
          __typename: "MavenVersion",
          id: "mv",
          groupId: "org.acme",
          artifactId: "api",
          version: "3.1",
          sizeBytes: 10 * 1024 * 1024,
          softDeletedAt: "2026-11-04T00:00:00Z",
        },
      },
      {
        __typename: "PublishEvent",
        publishedAt: "2026-11-01T10:00:00Z",
        cached: false,
        repository: repo("app", "OCI"),
        artifact: {
          __typename: "ContainerManifest",
          id: "m",
          digest: "sha256:" + "ab".repeat(32),
          mediaType: "application/vnd.oci.image.manifest.v1+json",
          size: 512,
          softDeletedAt: null,
          tags: ["v1"],
          image: { __typename: "ContainerImage", id: "i", name: "api" },
        },
      },
    ];
    renderRoutes("/n/acme/history", <Route path="/n/:ns/history" element={<PublishHistory />} />, () => ({
      data: { namespace: { __typename: "Namespace", id: "ns", publishHistory: connection("PublishEvent", events) } },
    }));
    const npmRow = (await screen.findByText(/left-pad@1\.3\.0/)).closest("tr")!;
    expect(within(npmRow).getByText("1.5 KiB")).toBeTruthy();
    expect(within(npmRow).queryByText("deleted")).toBeNull();
    expect(within(npmRow).queryByText("cached")).toBeNull();
    // Cached by remote repositories: marked, named as upstream, no size.
    const cachedNpm = screen.getByText(/@types\/node@22\.1\.0/).closest("tr")!;
    expect(within(cachedNpm).getByText("cached")).toBeTruthy();
    expect(within(cachedNpm).getByText("—")).toBeTruthy();
    const cachedImage = screen.getByText(/library\/alpine@/).closest("tr")!;
    expect(within(cachedImage).getByText("cached")).toBeTruthy();
    expect(within(cachedImage).getByText("docker")).toBeTruthy();
    const mavenRow = screen.getByText(/org\.acme:api:3\.1/).closest("tr")!;
    expect(within(mavenRow).getByText("10 MiB")).toBeTruthy();
    expect(within(mavenRow).getByText("deleted")).toBeTruthy();
    expect(within(mavenRow).queryByText("cached")).toBeNull();
    const imageRow = screen.getByText("v1").closest("tr")!;
    expect(within(imageRow).getByRole("link", { name: /api@sha256:abab/ }).getAttribute("href")).toContain("/n/acme/r/app/images/api?manifest=");
    // The last page ends with its last event: no empty row after it.
    const rows = [...imageRow.closest("table")!.querySelectorAll("tbody tr")];
    expect(rows).toHaveLength(events.length);
    expect(rows.at(-1)).toBe(imageRow);
  });

  it("turns a UTC day range into from (inclusive) and to (exclusive)", () => {
    expect(dayStart("2026-11-02")).toBe("2026-11-02T00:00:00.000Z");
    expect(dayEnd("2026-11-02")).toBe("2026-11-03T00:00:00.000Z");
    expect(dayStart("11/02/2026")).toBeNull();
    expect(dayEnd(null)).toBeNull();
  });
});
