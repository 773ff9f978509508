// The node flags the API process runs with: the image, the Helm chart, docker-compose and every stack of this
// repository start it with them (tests keep them in step).
//
// --v8-pool-size=1: V8's background threads (the garbage collector's helpers and the optimizing compiler) are four by
// default whatever the CPUs, and at a burst of work they all become runnable beside the event loop, which then waits
// for a CPU while holding every acknowledgement it owes. The API's work is one event loop; one background thread keeps
// the collector's concurrent work off it without crowding it out. Measured at 500 callbacks/s on 2 cores with the
// whole stack beside it (npm run bench, paired runs): ack p99 7.0 and 6.4 ms against 12.7 and 7.1 ms, p99.9 9.6 and
// 8.3 ms against 22.2 and 17.1 ms (files inbox); the event loop waited for a CPU 5-6 % of the time against 7-8 %.
export const API_NODE_FLAGS: readonly string[] = ['--v8-pool-size=1'];
