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
