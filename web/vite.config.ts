/// <reference types="vitest/config" />
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";
import react from "@vitejs/plugin-react";

// GraphiQL's stylesheet embeds its fonts as data: URLs (about 360 KB),
// which the pages' CSP (font-src 'self') refuses: the playground uses
// system fonts (src/playground/playground.css) and the build drops them.
function dropGraphiQLFonts(): Plugin {
  return {
    name: "drop-graphiql-fonts",
    enforce: "pre",
    transform(code, id) {
      if (!/node_modules[\\/]graphiql[\\/]dist[\\/]style\.css$/.test(id)) return null;
      return { code: code.replace(/@font-face\s*\{[^}]*\}/g, ""), map: null };
    },
  };
}


// entriesAware chunks are named after the entries that load them
// ("vendor~index~playground"; GraphiQL's lazily loaded editor addons
// count as entries too): name them after the pages.
function chunkName(name: string): string {
  if (!name.startsWith("vendor~")) return name;
  const by = name.split("~").slice(1);
  if (by.includes("index")) return by.length === 1 ? "vendor-ui" : "vendor";
  return "vendor-playground";
}

// The built files go to dist/, which the Go package embeds (web.go): the
// UI (index.html) and the GraphQL playground (playground.html).
// Output names carry content hashes only, so two builds of the same
// sources are byte-identical (check-dist.sh relies on it).
export default defineConfig({
  plugins: [react(), dropGraphiQLFonts()],
  resolve: {
    // A CSP-compatible replacement (see the module).
    alias: [
      {
        find: /^react-style-singleton$/,
        replacement: fileURLToPath(new URL("src/playground/styleSingleton.ts", import.meta.url)),
      },
    ],
  },
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    reportCompressedSize: true,
    // The UI's chunks stay far below it; GraphiQL's libraries are one file
    // of about 750 kB that only the playground loads.
    chunkSizeWarningLimit: 800,
    rolldownOptions: {
      onLog(level, log, handler) {
        // React Compiler's "use no memo" in its runtime means nothing to a
        // bundle; the warning would come with every build.
        if (log.code === "MODULE_LEVEL_DIRECTIVE" && log.message.includes("react-compiler-runtime")) return;
        handler(level, log);
      },
      input: {
        index: fileURLToPath(new URL("index.html", import.meta.url)),
        playground: fileURLToPath(new URL("playground.html", import.meta.url)),
      },
      output: {
        // Libraries in their own files: a UI change leaves them cached.
        // Those a page loads at once go by the pages that use them, so the
        // UI never loads GraphiQL: vendor (both pages), vendor-ui,
        // vendor-playground. What GraphiQL imports lazily (its editor and
        // addons) goes to one file, graphiql, rather than one per import.
        codeSplitting: {
          groups: [
            { name: "vendor", test: /node_modules/, tags: ["$initial"], entriesAware: true, priority: 2 },
            { name: "graphiql", test: /node_modules/, priority: 1 },
          ],
        },
        chunkFileNames: (c) => `assets/${chunkName(c.name)}-[hash].js`,
        assetFileNames: (a) => {
          const n = a.names[0] ?? "asset";
          const ext = path.extname(n);
          return `assets/${chunkName(n.slice(0, n.length - ext.length))}-[hash]${ext}`;
        },
      },
    },
  },
  server: {
    // `npm run dev` against `make run` on :8080.
    proxy: { "/graphql": "http://127.0.0.1:8080" },
  },
  test: {
    environment: "jsdom",
    globals: true,
    include: ["src/**/*.test.{ts,tsx}"],
    setupFiles: ["src/test/setup.ts"],
    // One jsdom environment per worker for all test files instead of a
    // fresh one per file: setting it up, importing the modules and
    // running the setup file for each file took 20 of the 36.5 s of a
    // run, which now takes 9 to 10 s. What a file could leave behind is
    // undone after every test: spies and stubbed globals here, the
    // rendered trees, storage and title in the setup file. `npx vitest
    // run --sequence.shuffle` runs files and tests in a random order to
    // check that none depends on another.
    isolate: false,
    restoreMocks: true,
    unstubGlobals: true,
    // jsdom renders 120-row tables slowly on a 2-core machine.
    testTimeout: 30000,
  },
});
