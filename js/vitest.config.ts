import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  resolve: {
    alias: {
      // src/layout/client.ts imports the worker bundle, which build.mjs inlines (from
      // src/layout/worker.ts); unit tests never start a worker.
      "virtual:layout-worker": fileURLToPath(new URL("./test/worker_stub.ts", import.meta.url)),
    },
  },
  test: {
    include: ["test/**/*.test.ts"],
    environment: "node",
  },
});
