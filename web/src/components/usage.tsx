// How to use a repository with its clients. These follow the protocol
// routes of the server (/v2/, /npm/, /maven/), not the GraphQL API.
import type { Format } from "../gql/graphql";
import { CopyBlock } from "./ui";

export function containerRef(host: string, ns: string, repo: string, image: string): string {
  return `${host}/${ns}/${repo}/${image}`;
}

export function dockerPull(host: string, ns: string, repo: string, image: string, tagOrDigest: string): string {
  const sep = tagOrDigest.startsWith("sha256:") ? "@" : ":";
  return `docker pull ${containerRef(host, ns, repo, image)}${sep}${tagOrDigest}`;
}

export function orasPull(host: string, ns: string, repo: string, image: string, tagOrDigest: string): string {
  const sep = tagOrDigest.startsWith("sha256:") ? "@" : ":";
  const plain = window.location.protocol === "http:" ? " --plain-http" : "";
  return `oras pull${plain} ${containerRef(host, ns, repo, image)}${sep}${tagOrDigest}`;
}

export function npmRegistryURL(origin: string, ns: string, repo: string): string {
  return `${origin}/npm/${ns}/${repo}/`;
}

export function npmrc(origin: string, ns: string, repo: string): string {
  const url = npmRegistryURL(origin, ns, repo);
  const noScheme = url.replace(/^https?:/, "");
  return `registry=${url}\n${noScheme}:_authToken=\${ARTIFACT_REGISTRY_TOKEN}`;
}

/** The scope of a scoped npm package name ("@scope"), or null. */
export function npmScope(packageName: string): string | null {
  const m = /^(@[^/]+)\//.exec(packageName);
  return m ? m[1] : null;
}

/**
 * The .npmrc lines that make npm fetch one package from this repository: a
 * scoped package maps only its scope to the registry (other packages keep
 * coming from the default registry), an unscoped one needs the registry
 * itself. The token line is the same in both.
 */
export function npmrcFor(origin: string, ns: string, repo: string, packageName: string): string {
  const scope = npmScope(packageName);
  if (!scope) return npmrc(origin, ns, repo);
  const url = npmRegistryURL(origin, ns, repo);
  const noScheme = url.replace(/^https?:/, "");
  return `${scope}:registry=${url}\n${noScheme}:_authToken=\${ARTIFACT_REGISTRY_TOKEN}`;
}

/** `npm install name@version` (or name@tag); the .npmrc lines say where from. */
export function npmInstall(packageName: string, versionOrTag?: string): string {
  return `npm install ${packageName}${versionOrTag ? `@${versionOrTag}` : ""}`;
}

function xmlEscape(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export interface MavenCoordinates {
  groupId: string;
  artifactId: string;
  version: string;
  /** Packaging of the file when it is not a jar (pom, war, …). */
  type?: string | null;
  classifier?: string | null;
}

/** The pom.xml <dependency> element for a Maven version (or one of its files). */
export function mavenDependency(c: MavenCoordinates): string {
  const lines = [
    "<dependency>",
    `  <groupId>${xmlEscape(c.groupId)}</groupId>`,
    `  <artifactId>${xmlEscape(c.artifactId)}</artifactId>`,
    `  <version>${xmlEscape(c.version)}</version>`,
  ];
  if (c.type && c.type !== "jar") lines.push(`  <type>${xmlEscape(c.type)}</type>`);
  if (c.classifier) lines.push(`  <classifier>${xmlEscape(c.classifier)}</classifier>`);
  lines.push("</dependency>");
  return lines.join("\n");
}

/**
 * Classifier and extension of a file of a Maven version, from its name
 * (`<artifactId>-<version>[-<classifier>].<ext>`); null for files that are
 * not artifacts of the version (checksums, signatures, metadata) or that do
 * not follow the layout. SNAPSHOT files carry a timestamped version, so
 * any version text between the artifactId and the classifier is accepted
 * when `version` ends in -SNAPSHOT.
 */
export function mavenFileParts(
  fileName: string,
  artifactId: string,
  version: string,
): { classifier: string | null; extension: string } | null {
  if (/\.(md5|sha1|sha256|sha512|asc)$/.test(fileName) || fileName.startsWith("maven-metadata")) return null;
  const prefix = `${artifactId}-`;
  if (!fileName.startsWith(prefix)) return null;
  let rest = fileName.slice(prefix.length);
  if (rest.startsWith(version)) {
    rest = rest.slice(version.length);
  } else if (version.endsWith("-SNAPSHOT")) {
    const base = version.slice(0, -"-SNAPSHOT".length);
    const m = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-\\d{8}\\.\\d{6}-\\d+`).exec(rest);
    if (!m) return null;
    rest = rest.slice(m[0].length);
  } else {
    return null;
  }
  // Extensions Maven uses with two dots.
  const ext = /\.(tar\.gz|tar\.bz2)$/.exec(rest)?.[1] ?? /\.([^.]+)$/.exec(rest)?.[1];
  if (!ext) return null;
  const body = rest.slice(0, rest.length - ext.length - 1);
  if (body === "") return { classifier: null, extension: ext };
  if (!body.startsWith("-") || body.length < 2) return null;
  return { classifier: body.slice(1), extension: ext };
}

/**
 * The main artifact of a version among its files: the one without a
 * classifier that is not the pom (what the packaging built: jar, war, aar…;
 * a jar first when there are several), else the pom itself (packaging pom:
 * a parent or a BOM). Null when no file follows the layout.
 */
export function mavenMainArtifact(
  fileNames: string[],
  artifactId: string,
  version: string,
): { fileName: string; extension: string } | null {
  let pom: { fileName: string; extension: string } | null = null;
  let other: { fileName: string; extension: string } | null = null;
  for (const fileName of fileNames) {
    const parts = mavenFileParts(fileName, artifactId, version);
    if (!parts || parts.classifier) continue;
    if (parts.extension === "jar") return { fileName, extension: "jar" };
    if (parts.extension === "pom") pom ??= { fileName, extension: "pom" };
    else other ??= { fileName, extension: parts.extension };
  }
  return other ?? pom;
}

/**
 * The <dependency> for one file of a version, or null where depending on
 * that file is not what a Maven user wants: checksums, signatures and
 * metadata, and the pom of a version whose main artifact is another file
 * (depending on the version brings its pom along). The main artifact's
 * snippet is the version's; a classified artifact (sources, javadoc, a
 * native build) names its <classifier>, and <type> where it is not a jar.
 */
export function mavenFileDependency(
  c: { groupId: string; artifactId: string; version: string },
  fileName: string,
  main: { extension: string } | null,
): string | null {
  const parts = mavenFileParts(fileName, c.artifactId, c.version);
  if (!parts) return null;
  if (!parts.classifier && parts.extension === "pom" && main?.extension !== "pom") return null;
  return mavenDependency({ ...c, type: parts.extension, classifier: parts.classifier });
}

export function mavenURL(origin: string, ns: string, repo: string): string {
  return `${origin}/maven/${ns}/${repo}/`;
}

export function mavenServerId(ns: string, repo: string): string {
  return `${ns}-${repo}`;
}

export function mavenSettings(ns: string, repo: string): string {
  return `<settings>
  <servers>
    <server>
      <id>${mavenServerId(ns, repo)}</id>
      <username>token</username>
      <password>\${env.ARTIFACT_REGISTRY_TOKEN}</password>
    </server>
  </servers>
</settings>`;
}

export function mavenPom(origin: string, ns: string, repo: string): string {
  const id = mavenServerId(ns, repo);
  const url = mavenURL(origin, ns, repo);
  return `<repositories>
  <repository>
    <id>${id}</id>
    <url>${url}</url>
  </repository>
</repositories>
<distributionManagement>
  <repository>
    <id>${id}</id>
    <url>${url}</url>
  </repository>
</distributionManagement>`;
}

export function Usage({ format, ns, repo }: { format: Format; ns: string; repo: string }) {
  const { host, origin } = window.location;
  switch (format) {
    case "DOCKER":
    case "OCI": {
      const ref = containerRef(host, ns, repo, "IMAGE");
      return (
        <div className="usage">
          <CopyBlock label="Log in (password: your token)" text={`docker login ${host}`} />
          <CopyBlock label="Push an image" text={`docker tag IMAGE:TAG ${ref}:TAG\ndocker push ${ref}:TAG`} multiline />
          <CopyBlock
            label="Push an OCI artifact with oras"
            text={`oras push${window.location.protocol === "http:" ? " --plain-http" : ""} ${ref}:TAG FILE`}
          />
        </div>
      );
    }
    case "NPM":
      return (
        <div className="usage">
          <CopyBlock label="Registry URL" text={npmRegistryURL(origin, ns, repo)} />
          <CopyBlock label=".npmrc" text={npmrc(origin, ns, repo)} multiline />
          <CopyBlock label="Publish" text={`npm publish --registry ${npmRegistryURL(origin, ns, repo)}`} />
          <CopyBlock label="Install a package" text={`npm install PACKAGE --registry ${npmRegistryURL(origin, ns, repo)}`} />
        </div>
      );
    case "MAVEN":
      return (
        <div className="usage">
          <CopyBlock label="Repository URL" text={mavenURL(origin, ns, repo)} />
          <CopyBlock label="pom.xml" text={mavenPom(origin, ns, repo)} multiline />
          <CopyBlock label="settings.xml server entry" text={mavenSettings(ns, repo)} multiline />
        </div>
      );
  }
}
