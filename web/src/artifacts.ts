// What is attached to an image (the manifests whose OCI subject it is),
// grouped the way registries show them: signatures, SBOMs, attestations,
// the rest by artifact type.

export type ArtifactKind = "signature" | "sbom" | "attestation" | "other";

export const kindLabels: Record<ArtifactKind, { one: string; many: string }> = {
  signature: { one: "signature", many: "Signatures" },
  sbom: { one: "SBOM", many: "SBOMs" },
  attestation: { one: "attestation", many: "Attestations" },
  other: { one: "artifact", many: "Other artifacts" },
};

const order: ArtifactKind[] = ["signature", "sbom", "attestation", "other"];

/** The kind of an artifact type (cosign, Notation, SPDX, CycloneDX, in-toto, buildx and the like). */
export function artifactKind(artifactType: string | null | undefined): ArtifactKind {
  const t = (artifactType ?? "").toLowerCase();
  if (/sbom|spdx|cyclonedx|syft/.test(t)) return "sbom";
  if (/signature|simplesigning|sigstore|notary/.test(t)) return "signature";
  if (/in-toto|intoto|attestation|provenance|slsa|dsse|vex/.test(t)) return "attestation";
  return "other";
}

export interface Grouped<T> {
  kind: ArtifactKind;
  label: string;
  items: T[];
}

/** Groups artifacts by kind, in a fixed order (signatures first), keeping each group's order. */
export function groupArtifacts<T extends { artifactType?: string | null }>(items: readonly T[]): Grouped<T>[] {
  const by = new Map<ArtifactKind, T[]>();
  for (const it of items) {
    const k = artifactKind(it.artifactType);
    by.set(k, [...(by.get(k) ?? []), it]);
  }
  return order.filter((k) => by.has(k)).map((k) => ({ kind: k, label: kindLabels[k].many, items: by.get(k)! }));
}

/** "2 signatures, 1 SBOM": what is attached, counted by kind. */
export function attachedSummary(items: readonly { artifactType?: string | null }[]): string {
  return groupArtifacts(items)
    .map((g) => {
      const n = g.items.length;
      const one = kindLabels[g.kind].one;
      return `${n} ${n === 1 ? one : `${one}s`}`;
    })
    .join(", ");
}

export interface PlatformLike {
  os: string;
  architecture: string;
  variant?: string | null;
  osVersion?: string | null;
}

/** "linux/arm64/v8" (the notation of docker's --platform). */
export function formatPlatform(p: PlatformLike | null | undefined): string {
  if (!p) return "–";
  return [p.os, p.architecture, p.variant].filter(Boolean).join("/") + (p.osVersion ? ` (${p.osVersion})` : "");
}

/** A buildx attestation entry of an index: platform unknown/unknown, annotated with the manifest it describes. */
export function attestationOf(annotations: readonly { key: string; value: string }[]): string | null {
  const type = annotations.find((a) => a.key === "vnd.docker.reference.type")?.value;
  if (type !== "attestation-manifest") return null;
  return annotations.find((a) => a.key === "vnd.docker.reference.digest")?.value ?? "";
}

/** A short name of a manifest media type. */
export function manifestKind(mediaType: string): string {
  switch (mediaType) {
    case "application/vnd.oci.image.index.v1+json":
      return "OCI index";
    case "application/vnd.docker.distribution.manifest.list.v2+json":
      return "Docker manifest list";
    case "application/vnd.oci.image.manifest.v1+json":
      return "OCI manifest";
    case "application/vnd.docker.distribution.manifest.v2+json":
      return "Docker manifest";
    case "application/vnd.oci.artifact.manifest.v1+json":
      return "OCI artifact";
    default:
      return mediaType;
  }
}

export function isIndexType(mediaType: string): boolean {
  return (
    mediaType === "application/vnd.oci.image.index.v1+json" ||
    mediaType === "application/vnd.docker.distribution.manifest.list.v2+json"
  );
}
