import { afterEach } from "vitest";
import { cleanup, configure } from "@testing-library/react";

// Role queries over 100-row tables are slow in jsdom on a small machine.
configure({ asyncUtilTimeout: 10000 });

// Test files share one environment (vite.config.ts): leave nothing for
// the next.
afterEach(() => {
  cleanup();
  sessionStorage.clear();
  localStorage.clear();
  document.title = "";
});
