export { SimRuntime, type SimRuntimeOptions, type ProbeOutcome } from './runtime.js';
export { FaultInjector, type Fault, type RuntimeOp } from './faults.js';
export { deriveProfile, evaluateExec, type ExecOutcome } from './command.js';
export { compileProfile, type Behaviour } from './behaviour.js';
export { parseImageReference, type ImageReference } from './images.js';
export {
  SimAnnotationPrefix,
  SimBehaviourAnnotation,
  simContainerBehaviourAnnotation,
  parseSimProfile,
  parseSimProfiles,
  parseSimProfilesYaml,
  type SimProfile,
  type SimProfiles,
} from './profile.js';
