/** Public API of the snapshot module: the run-state data model and (below) its v1alpha2 codec. */
export * from './state.js';
