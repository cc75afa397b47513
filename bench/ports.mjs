// The benchmarks take free ports the way the tests do (below Linux's ephemeral range).
export { freePort } from '../test/support/ports.mjs';
