import { afterEach } from "vitest";
import { cleanup, configure } from "@testing-library/react";

// Role queries over 100-row tables are slow in jsdom on a small machine.
configure({ asyncUtilTimeout: 10000 });

afterEach(() => {
  cleanup();
  sessionStorage.clear();
});
