// The layout worker's bundle as text: build.mjs bundles src/layout/worker.ts first and
// serves it under this name (the inline-layout-worker plugin); client.ts makes a Blob URL of
// it. Unit tests alias it to test/worker_stub.ts (vitest.config.ts): no worker there.
declare module "virtual:layout-worker" {
  const source: string;
  export default source;
}
