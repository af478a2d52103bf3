import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route } from "react-router";
import { describe, expect, it } from "vitest";
import type { Operation } from "urql";
import { connection, renderRoutes } from "../test/render";
import { ImageDetail } from "./ImageDetail";

const hex = (c: string) => c.repeat(64);
const INDEX = `sha256:${hex("a")}`;
const AMD = `sha256:${hex("b")}`;
const ARM = `sha256:${hex("c")}`;
const SIG = `sha256:${hex("d")}`;
const SBOM = `sha256:${hex("e")}`;
const OCI_INDEX = "application/vnd.oci.image.index.v1+json";
const OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json";
const SIG_TYPE = "application/vnd.cncf.notary.signature";
const SBOM_TYPE = "application/spdx+json";
const hostile = `<img src=x onerror="window.__pwned=1">`;

const when = "2026-11-02T10:00:00Z";

function manifestRow(digest: string, o: Partial<Record<string, unknown>> = {}) {
  return {
    __typename: "ContainerManifest",
    id: `m-${digest.slice(7, 8)}`,
    digest,
    mediaType: OCI_MANIFEST,
    artifactType: null,
    size: 1000,
    createdAt: when,
    tags: [],
    subjectDigest: null,
    subject: null,
    references: [],
    parents: [],
    referrers: [],
    ...o,
  };
}

const ref = (digest: string, artifactType: string) => ({ __typename: "ContainerManifest", id: `m-${digest.slice(7, 8)}`, artifactType });

const platform = (os: string, architecture: string, variant: string | null = null) => ({
  __typename: "ContainerPlatform",
  os,
  architecture,
  variant,
  osVersion: null,
});

const entry = (digest: string, p: ReturnType<typeof platform>, size: number, annotations: { key: string; value: string }[] = []) => ({
  __typename: "ContainerIndexEntry",
  digest,
  mediaType: OCI_MANIFEST,
  size: 500,
  artifactType: null,
  platform: p,
  annotations: annotations.map((a) => ({ __typename: "KeyValue", ...a })),
  manifest: size ? { __typename: "ContainerManifest", id: `m-${digest.slice(7, 8)}`, digest, size } : null,
});

const detailBase = {
  __typename: "ContainerManifest",
  artifactType: null,
  size: 0,
  createdAt: when,
  tags: [],
  subjectDigest: null,
  subject: null,
  compressedSize: null,
  configBlob: null,
  config: null,
  layers: null,
  indexEntries: null,
  annotations: [],
  parents: [],
  referrers: [],
};

const indexDetail = {
  ...detailBase,
  id: "m-a",
  digest: INDEX,
  mediaType: OCI_INDEX,
  size: 3_300_000,
  tags: ["v1"],
  indexEntries: [
    entry(AMD, platform("linux", "amd64"), 2_100_000),
    entry(ARM, platform("linux", "arm64", "v8"), 1_200_000),
    entry(`sha256:${hex("f")}`, platform("unknown", "unknown"), 900, [
      { key: "vnd.docker.reference.type", value: "attestation-manifest" },
      { key: "vnd.docker.reference.digest", value: AMD },
    ]),
  ],
  referrers: [
    {
      __typename: "ContainerManifest",
      id: "m-d",
      digest: SIG,
      mediaType: OCI_MANIFEST,
      artifactType: SIG_TYPE,
      size: 700,
      createdAt: when,
    },
  ],
};

function imageDetail(config: object | null) {
  return {
    ...detailBase,
    id: "m-b",
    digest: AMD,
    mediaType: OCI_MANIFEST,
    artifactType: "application/vnd.oci.image.config.v1+json",
    size: 2_100_000,
    compressedSize: 2_098_900,
    configBlob: { __typename: "ContainerDescriptor", digest: `sha256:${hex("1")}`, mediaType: "application/vnd.oci.image.config.v1+json", size: 900 },
    config,
    layers: [
      { __typename: "ContainerDescriptor", digest: `sha256:${hex("2")}`, mediaType: "application/vnd.oci.image.layer.v1.tar+gzip", size: 2_000_000, title: null },
      { __typename: "ContainerDescriptor", digest: `sha256:${hex("3")}`, mediaType: "application/vnd.oci.image.layer.v1.tar+zstd", size: 98_000, title: null },
    ],
    parents: [{ __typename: "ContainerManifest", id: "m-a", digest: INDEX, mediaType: OCI_INDEX }],
    referrers: [
      { __typename: "ContainerManifest", id: "m-e", digest: SBOM, mediaType: OCI_MANIFEST, artifactType: SBOM_TYPE, size: 4000, createdAt: when },
    ],
  };
}

const goodConfig = {
  __typename: "ContainerImageConfig",
  created: "2026-10-30T08:00:00Z",
  author: null,
  os: "linux",
  architecture: "amd64",
  variant: null,
  entrypoint: ["/bin/app", "--serve"],
  cmd: ["--port", "8080"],
  workingDir: "/srv",
  user: "app",
  exposedPorts: ["8080/tcp"],
  labels: [
    { __typename: "KeyValue", key: "org.opencontainers.image.source", value: "https://example.test/app" },
    { __typename: "KeyValue", key: "note", value: hostile },
  ],
};

function responder(details: Record<string, { manifest: object | null; errors?: { message: string; code?: string; path: string[] }[] }>) {
  return (op: Operation) => {
    const name = op.query.definitions.find((d) => d.kind === "OperationDefinition")?.name?.value;
    const image = (inner: object) => ({
      data: { repository: { __typename: "Repository", id: "r1", image: { __typename: "ContainerImage", id: "i1", name: "team/api", ...inner } } },
    });
    switch (name) {
      case "Image":
        return image({ lastDownloadedAt: null });
      case "ImageTags":
        return image({
          tags: connection(
            "ContainerTag",
            [
              {
                __typename: "ContainerTag",
                id: "t1",
                name: "v1",
                manifest: {
                  __typename: "ContainerManifest",
                  id: "m-a",
                  digest: INDEX,
                  mediaType: OCI_INDEX,
                  size: 3_300_000,
                  createdAt: when,
                  indexEntries: indexDetail.indexEntries.map((e) => ({ __typename: e.__typename, digest: e.digest, platform: e.platform })),
                  referrers: [ref(SIG, SIG_TYPE)],
                },
              },
            ],
            { totalCount: 1 },
          ),
        });
      case "ImageManifests":
        return image({
          manifests: connection(
            "ContainerManifest",
            [
              manifestRow(INDEX, { mediaType: OCI_INDEX, tags: ["v1"], references: [{ __typename: "ContainerManifest", id: "m-b" }], referrers: [ref(SIG, SIG_TYPE)] }),
              manifestRow(AMD, { parents: [{ __typename: "ContainerManifest", id: "m-a", digest: INDEX }], referrers: [ref(SBOM, SBOM_TYPE)] }),
              manifestRow(SIG, { artifactType: SIG_TYPE, subjectDigest: INDEX, subject: { __typename: "ContainerManifest", id: "m-a", digest: INDEX } }),
            ],
            { totalCount: 3 },
          ),
        });
      case "ManifestDetail": {
        const d = details[(op.variables as { digest: string }).digest];
        return {
          data: { repository: { __typename: "Repository", id: "r1", image: { __typename: "ContainerImage", id: "i1", manifest: d?.manifest ?? null } } },
          errors: d?.errors,
        };
      }
    }
    return new Error(`unexpected operation ${name}`);
  };
}

const route = <Route path="/n/:ns/r/:repo/images/*" element={<ImageDetail />} />;

describe("ImageDetail", () => {
  it("shows an index's platforms and what is attached in the tags, and marks an attached artifact with its subject", async () => {
    const user = userEvent.setup();
    renderRoutes("/n/acme/r/app/images/team/api", route, responder({ [INDEX]: { manifest: indexDetail } }));
    const tag = (await screen.findByText("linux/amd64, linux/arm64/v8")).closest("tr")!;
    expect(tag.getAttribute("data-tag")).toBe("v1");
    expect(within(tag).getByText("1 signature")).toBeTruthy();
    expect(within(tag).getByText("3.1 MiB")).toBeTruthy();

    const sigRow = (await screen.findByText("signature attached to", { exact: false })).closest("tr")!;
    expect(sigRow.getAttribute("data-digest")).toBe(SIG);
    expect(within(sigRow).getByText(SIG_TYPE)).toBeTruthy();
    expect(within(sigRow).queryByText("untagged")).toBeNull();
    const indexRow = screen.getAllByRole("row").find((r) => r.getAttribute("data-digest") === INDEX)!;
    expect(within(indexRow).getByText("1 child · 1 signature attached")).toBeTruthy();
    const childRow = screen.getAllByRole("row").find((r) => r.getAttribute("data-digest") === AMD)!;
    expect(within(childRow).getByText("in index", { exact: false })).toBeTruthy();

    // The subject opens from the attached artifact's row.
    await user.click(within(sigRow).getByRole("button", { name: /the subject/ }));
    await waitFor(() => expect(screen.getByTestId("location").textContent).toBe(`/n/acme/r/app/images/team/api?manifest=${encodeURIComponent(INDEX)}`));
  });

  it("shows an index with its platforms, sizes and attached signature", async () => {
    const user = userEvent.setup();
    renderRoutes(`/n/acme/r/app/images/team/api?manifest=${INDEX}`, route, responder({ [INDEX]: { manifest: indexDetail } }));
    const detail = await screen.findByRole("region", { name: /OCI index/ });
    const platforms = within(detail).getByRole("table", { name: "Platforms" });
    const rows = within(platforms).getAllByRole("row").slice(1);
    expect(rows.map((r) => r.getAttribute("data-platform"))).toEqual(["linux/amd64", "linux/arm64/v8"]);
    expect(within(rows[0]).getByText("2.0 MiB")).toBeTruthy();
    expect(within(rows[1]).getByText("1.1 MiB")).toBeTruthy();
    expect(within(detail).getByText("Total size (all platforms)")).toBeTruthy();
    expect(within(detail).getByText("Build attestations in the index:", { exact: false })).toBeTruthy();
    const sigs = detail.querySelector('[data-kind="signature"]') as HTMLElement;
    expect(within(sigs).getByText("Signatures")).toBeTruthy();
    expect(within(sigs).getByText(SIG_TYPE)).toBeTruthy();
    await user.click(within(rows[1]).getByRole("button", { name: "Open linux/arm64/v8 manifest" }));
    await waitFor(() => expect(screen.getByTestId("location").textContent).toContain(encodeURIComponent(ARM)));
  });

  it("shows an image's total size, config highlights and layers, user data as text", async () => {
    renderRoutes(`/n/acme/r/app/images/team/api?manifest=${AMD}`, route, responder({ [AMD]: { manifest: imageDetail(goodConfig) } }));
    const detail = await screen.findByRole("region", { name: /OCI manifest/ });
    expect(within(detail).getByText("Total size (compressed)").nextSibling?.textContent).toBe("2.0 MiB");
    expect(within(detail).getByText('["/bin/app","--serve"]')).toBeTruthy();
    expect(within(detail).getByText('["--port","8080"]')).toBeTruthy();
    expect(within(detail).getByText("8080/tcp")).toBeTruthy();
    expect(within(detail).getByText("linux/amd64")).toBeTruthy();
    const layers = within(detail).getAllByRole("row").filter((r) => r.closest("table")?.getAttribute("aria-label") === "Layers").slice(1);
    expect(layers).toHaveLength(2);
    expect(within(layers[0]).getByText("application/vnd.oci.image.layer.v1.tar+gzip")).toBeTruthy();
    expect(within(layers[0]).getByText("1.9 MiB")).toBeTruthy();
    expect(within(layers[1]).getByText("96 KiB")).toBeTruthy();
    // A label that looks like markup is shown as it is, never parsed.
    const labels = within(detail).getByRole("table", { name: "Labels" });
    expect(within(labels).getByText(hostile)).toBeTruthy();
    expect(document.querySelector("img")).toBeNull();
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
    // What is attached, and where the manifest is listed.
    expect((detail.querySelector('[data-kind="sbom"]') as HTMLElement).textContent).toContain(SBOM_TYPE);
    expect(within(detail).getByText("Listed by")).toBeTruthy();
  });

  it("keeps the page when the config cannot be read", async () => {
    renderRoutes(
      `/n/acme/r/app/images/team/api?manifest=${AMD}`,
      route,
      responder({
        [AMD]: {
          manifest: imageDetail(null),
          errors: [
            {
              message: "the config blob sha256:111 is not a valid image configuration: config.Cmd is not a []string",
              code: "INVALID_INPUT",
              path: ["repository", "image", "manifest", "config"],
            },
          ],
        },
      }),
    );
    const detail = await screen.findByRole("region", { name: /OCI manifest/ });
    expect(within(detail).getByRole("alert").textContent).toContain("is not a valid image configuration");
    expect(within(detail).getByRole("table", { name: "Layers" })).toBeTruthy();
    expect(within(detail).getByText("Total size (compressed)")).toBeTruthy();
  });

  it("marks an artifact whose subject is not in the image", async () => {
    renderRoutes(
      `/n/acme/r/app/images/team/api?manifest=${SIG}`,
      route,
      responder({
        [SIG]: {
          manifest: {
            ...detailBase,
            id: "m-d",
            digest: SIG,
            mediaType: OCI_MANIFEST,
            artifactType: SIG_TYPE,
            subjectDigest: `sha256:${hex("9")}`,
            layers: [],
            configBlob: { __typename: "ContainerDescriptor", digest: `sha256:${hex("4")}`, mediaType: "application/vnd.oci.empty.v1+json", size: 2 },
          },
        },
      }),
    );
    const note = await screen.findByTestId("attached-to");
    expect(note.textContent).toContain("not an active manifest of this image");
    expect(note.textContent).toContain(SIG_TYPE);
    expect(screen.getByText("is not an image configuration.", { exact: false })).toBeTruthy();
  });
});
