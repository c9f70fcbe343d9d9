/**
 * The operator's public surface: the VirtualNode controller (operator/controller.ts) and the ManagedNode
 * seam it drives (operator/managednode.ts). The status writer (operator/status.ts), pod-CIDR defaulting
 * (operator/podcidr.ts) and the API seam (operator/api.ts) are imported from their own modules.
 */
export { Operator, type OperatorOptions } from './operator/controller.js';
export type { ManagedNode, ManagedNodeFactory, ManagedNodeObservation } from './operator/managednode.js';
export type { OperatorAPI, VirtualNodeWriter } from './operator/api.js';
