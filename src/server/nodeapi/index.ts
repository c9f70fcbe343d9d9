export * from './auth.js';
export * from './logs.js';
export * from './registry.js';
export * from './server.js';
