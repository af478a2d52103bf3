import { describe, expect, it } from "vitest";
import { artifactKind, attachedSummary, attestationOf, formatPlatform, groupArtifacts } from "./artifacts";

describe("artifactKind", () => {
  it.each([
    ["application/vnd.dev.cosign.simplesigning.v1+json", "signature"],
    ["application/vnd.cncf.notary.signature", "signature"],
    ["application/vnd.example.signature", "signature"],
    ["application/spdx+json", "sbom"],
    ["application/vnd.cyclonedx+json", "sbom"],
    ["application/vnd.syft+json", "sbom"],
    ["application/vnd.in-toto+json", "attestation"],
    ["application/vnd.dsse.envelope.v1+json", "attestation"],
    ["application/vnd.example.thing.v1", "other"],
    [null, "other"],
  ])("%s is a %s", (type, kind) => {
    expect(artifactKind(type)).toBe(kind);
  });
});

describe("groupArtifacts", () => {
  it("groups by kind, signatures first, keeping the order within a group", () => {
    const items = [
      { id: "a", artifactType: "application/vnd.example.thing" },
      { id: "b", artifactType: "application/spdx+json" },
      { id: "c", artifactType: "application/vnd.cncf.notary.signature" },
      { id: "d", artifactType: "application/vnd.dev.cosign.simplesigning.v1+json" },
    ];
    expect(groupArtifacts(items).map((g) => [g.label, g.items.map((i) => i.id)])).toEqual([
      ["Signatures", ["c", "d"]],
      ["SBOMs", ["b"]],
      ["Other artifacts", ["a"]],
    ]);
  });

  it("summarises counts by kind", () => {
    expect(
      attachedSummary([
        { artifactType: "application/vnd.cncf.notary.signature" },
        { artifactType: "application/vnd.cncf.notary.signature" },
        { artifactType: "application/spdx+json" },
      ]),
    ).toBe("2 signatures, 1 SBOM");
    expect(attachedSummary([{ artifactType: "application/spdx+json" }, { artifactType: "application/vnd.cyclonedx+json" }])).toBe("2 SBOMs");
    expect(attachedSummary([])).toBe("");
  });
});

describe("platforms", () => {
  it("writes platforms as docker's --platform does", () => {
    expect(formatPlatform({ os: "linux", architecture: "arm64", variant: "v8" })).toBe("linux/arm64/v8");
    expect(formatPlatform({ os: "windows", architecture: "amd64", osVersion: "10.0.20348.2227" })).toBe("windows/amd64 (10.0.20348.2227)");
    expect(formatPlatform(null)).toBe("–");
  });

  it("recognises buildx attestation entries", () => {
    expect(
      attestationOf([
        { key: "vnd.docker.reference.type", value: "attestation-manifest" },
        { key: "vnd.docker.reference.digest", value: "sha256:abc" },
      ]),
    ).toBe("sha256:abc");
    expect(attestationOf([{ key: "org.opencontainers.image.created", value: "2026" }])).toBeNull();
  });
});
