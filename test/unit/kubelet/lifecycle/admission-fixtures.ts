import type { AdmissionNode } from '../../../../src/kubelet/lifecycle/admission.js';

/** A node without labels or taints that admission sees with these allocatable amounts (cpu in millicores). */
export const admissionNode = (allocatable: Record<string, number>, name = 'n'): AdmissionNode => ({
  name,
  labels: {},
  taints: [],
  allocatable: new Map(Object.entries(allocatable)),
});
