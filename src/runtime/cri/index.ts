export { CriRuntime, type CriLogger, type CriRuntimeOptions } from './client.js';
export { criError, kindForGrpcError } from './errors.js';
export { buildContainerConfig, buildPodSandboxConfig, type NodeSettings } from './podconfig.js';
