export { CriRuntime, type CriLogger, type CriRuntimeOptions } from './client.js';
export { criError, kindForGrpcError } from './errors.js';
