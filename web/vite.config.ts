/// <reference types="vitest/config" />
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

// The built files go to dist/, which the Go package embeds (web.go).
// Output names carry content hashes only, so two builds of the same
// sources are byte-identical (check-dist.sh relies on it).
export default defineConfig({
  plugins: [react()],
  base: "/",
  build: {
    outDir: "dist",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
    reportCompressedSize: true,
    chunkSizeWarningLimit: 400,
    rolldownOptions: {
      output: {
        // Libraries in their own file: a UI change leaves it cached.
        codeSplitting: { groups: [{ name: "vendor", test: /node_modules/ }] },
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
    // jsdom renders 120-row tables slowly on a 2-core machine.
    testTimeout: 30000,
  },
});
