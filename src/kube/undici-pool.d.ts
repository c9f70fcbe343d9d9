// undici's Pool on its own (transport.ts): the package's index also loads fetch, WebSocket, caches and the
// rest of its API, about 8 MiB of the process's memory that the API server's connections never use.
declare module 'undici/lib/dispatcher/pool.js' {
  import type { Pool } from 'undici';
  const PoolClass: typeof Pool;
  export default PoolClass;
}
