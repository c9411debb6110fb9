export { Ledger, type RecoveryReport } from './ledger.js';
export type { ItemRow, SubmissionRow, CallRow } from './rows.js';
export type { LedgerStatus, MetadataNote, ProblemItem, StepStatus } from './read/status.js';
export { STATES, TERMINAL, canTransition, createsLeft, inPhase, phaseOf, type ItemState, type Phase } from './transitions.js';
export { holderId, type HeldLock, type LockRequest } from './lock.js';
export type { Rescue } from './fileCheck.js';
export {
  type ReportData,
  type ReportPhoto,
  type ReportCharged,
  type ReportDoneItem,
  type ReportProblem,
  type ReportStep,
  type ReportLatency,
  type ReportOptions,
  chooseBucketMs,
  IDLE_GAP_MS,
  type ReportActivity,
  type ReportBucket,
} from './read/report.js';
export {
  ProgressReader,
  readProgress,
  itemStateLookup,
  readCallWindows,
  RECENT_WINDOW_MS,
  type ProgressFacts,
  type ProgressOptions,
  type ItemStateOf,
} from './read/progress.js';
export { type HeldItem, type HoldKind, type Requeued } from './held.js';
export { type FailedItem, type FailedRequeued } from './failed.js';
export { PARKED_MS, type NotDownloaded } from './outputs.js';
export { crashPoint, CRASH_PHASES, type CrashPhase } from './crashpoint.js';
export {
  CONTENT_CHANGED_NOTE,
  type BatchReport,
  type DiscoveryPass,
  type FoundFile,
  type FoundUrl,
  type ReconcileReport,
  type ReconcileOptions,
} from './discovery.js';
export type { InputRow } from './inputs.js';
export type { FollowState } from './follow.js';
export type { OutputFile, AttemptRecord, FileMetadata, GoneNameFile, WrittenFileRow } from './outputFiles.js';
export type { ManifestFile, ManifestTasks } from './read/manifest.js';
export { metadataNoteText } from './outputFiles.js';
export { STEPS_REDO_NOTE, type Applied } from './stepLists.js';
export { LEGACY_SIG, blocking, readStepsCensus, type OtherList, type StepsCensus } from './read/census.js';
export type { NewSlot, SlotKind, CallKind, LoggedCall } from './calls.js';
export { type PhotoTransition } from './items.js';
export {
  readDecisions,
  type Decision,
  type KeptOutput,
  type Recorded,
  type RejectedPhoto,
  type ReviewAction,
  type ReviewCounts,
  type ReviewCursor,
  type ReviewFilter,
  type ReviewPhoto,
  type ReviewWindow,
  type ReviewState,
  type StandingDecision,
} from './reviews.js';
