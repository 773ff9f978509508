// The node flags the API process runs with everywhere (tests keep them in step). --v8-pool-size=1: one V8 background
// thread, not four, so in a burst the event loop does not wait for a CPU (docs/design-notes.md#the-apis-v8-flags).
export const API_NODE_FLAGS: readonly string[] = ['--v8-pool-size=1'];
