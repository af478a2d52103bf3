import { describe, expect, it } from "vitest";
import { mavenDependency, mavenFileDependency, mavenFileParts, mavenMainArtifact, npmInstall, npmScope, npmrc, npmrcFor } from "./usage";

const origin = "http://registry.example:8080";

describe("npm snippets", () => {
  it("finds the scope of a scoped name only", () => {
    expect(npmScope("@acme/ui")).toBe("@acme");
    expect(npmScope("left-pad")).toBeNull();
    expect(npmScope("@broken")).toBeNull();
  });

  it("maps only the scope of a scoped package to the repository", () => {
    expect(npmrcFor(origin, "acme", "web", "@acme/ui")).toBe(
      "@acme:registry=http://registry.example:8080/npm/acme/web/\n" +
        "//registry.example:8080/npm/acme/web/:_authToken=${ARTIFACT_REGISTRY_TOKEN}",
    );
  });

  it("points the default registry at the repository for an unscoped package", () => {
    expect(npmrcFor(origin, "acme", "web", "left-pad")).toBe(npmrc(origin, "acme", "web"));
    expect(npmrc(origin, "acme", "web").split("\n")[0]).toBe("registry=http://registry.example:8080/npm/acme/web/");
  });

  it("installs a version or a dist-tag", () => {
    expect(npmInstall("@acme/ui", "1.2.3")).toBe("npm install @acme/ui@1.2.3");
    expect(npmInstall("left-pad", "next")).toBe("npm install left-pad@next");
    expect(npmInstall("left-pad")).toBe("npm install left-pad");
  });
});

describe("Maven snippets", () => {
  it("writes a jar dependency without type or classifier", () => {
    expect(mavenDependency({ groupId: "com.example", artifactId: "lib", version: "1.0" })).toBe(
      "<dependency>\n  <groupId>com.example</groupId>\n  <artifactId>lib</artifactId>\n  <version>1.0</version>\n</dependency>",
    );
  });

  it("adds the type and classifier of other files, escaped", () => {
    const d = mavenDependency({ groupId: "g", artifactId: "a", version: "1<2", type: "war", classifier: "sources" });
    expect(d).toContain("<version>1&lt;2</version>");
    expect(d).toContain("<type>war</type>");
    expect(d).toContain("<classifier>sources</classifier>");
    expect(mavenDependency({ groupId: "g", artifactId: "a", version: "1", type: "jar" })).not.toContain("<type>");
  });

  it("reads classifier and extension from file names", () => {
    expect(mavenFileParts("lib-1.0.jar", "lib", "1.0")).toEqual({ classifier: null, extension: "jar" });
    expect(mavenFileParts("lib-1.0.pom", "lib", "1.0")).toEqual({ classifier: null, extension: "pom" });
    expect(mavenFileParts("lib-1.0-sources.jar", "lib", "1.0")).toEqual({ classifier: "sources", extension: "jar" });
    expect(mavenFileParts("lib-1.0-bin.tar.gz", "lib", "1.0")).toEqual({ classifier: "bin", extension: "tar.gz" });
    expect(mavenFileParts("lib-1.0-20260102.030405-7.jar", "lib", "1.0-SNAPSHOT")).toEqual({
      classifier: null,
      extension: "jar",
    });
    expect(mavenFileParts("lib-1.0-20260102.030405-7-tests.jar", "lib", "1.0-SNAPSHOT")).toEqual({
      classifier: "tests",
      extension: "jar",
    });
  });

  it("finds a version's main artifact: a jar first, another packaging, else the pom", () => {
    expect(mavenMainArtifact(["lib-1.0.pom", "lib-1.0-sources.jar", "lib-1.0.jar"], "lib", "1.0")).toEqual({ fileName: "lib-1.0.jar", extension: "jar" });
    expect(mavenMainArtifact(["lib-1.0.pom", "lib-1.0.war", "lib-1.0.jar"], "lib", "1.0")?.extension).toBe("jar");
    expect(mavenMainArtifact(["lib-1.0.pom", "lib-1.0.aar"], "lib", "1.0")?.extension).toBe("aar");
    expect(mavenMainArtifact(["lib-1.0.pom", "lib-1.0.pom.sha1"], "lib", "1.0")?.extension).toBe("pom");
    expect(mavenMainArtifact(["lib-1.0-sources.jar", "maven-metadata.xml"], "lib", "1.0")).toBeNull();
  });

  it("gives each artifact file the dependency that fetches it", () => {
    const c = { groupId: "g", artifactId: "lib", version: "1.0" };
    const jar = { extension: "jar" };
    expect(mavenFileDependency(c, "lib-1.0.jar", jar)).toBe(mavenDependency(c));
    expect(mavenFileDependency(c, "lib-1.0.pom", jar)).toBeNull();
    expect(mavenFileDependency(c, "lib-1.0.pom", { extension: "pom" })).toBe(mavenDependency({ ...c, type: "pom" }));
    expect(mavenFileDependency(c, "lib-1.0-javadoc.jar", jar)).toBe(mavenDependency({ ...c, classifier: "javadoc" }));
    expect(mavenFileDependency(c, "lib-1.0-linux-x86_64.so", jar)).toBe(mavenDependency({ ...c, type: "so", classifier: "linux-x86_64" }));
    expect(mavenFileDependency(c, "lib-1.0.jar.sha1", jar)).toBeNull();
  });

  it("leaves checksums, signatures, metadata and foreign names out", () => {
    for (const f of ["lib-1.0.jar.sha1", "lib-1.0.jar.md5", "lib-1.0.jar.asc", "maven-metadata.xml", "other-1.0.jar", "lib-1.0x.jar", "lib-1.0-.jar"]) {
      expect(mavenFileParts(f, "lib", "1.0"), f).toBeNull();
    }
    expect(mavenFileParts("lib-1.1-20260102.030405-7.jar", "lib", "1.0-SNAPSHOT")).toBeNull();
  });
});
