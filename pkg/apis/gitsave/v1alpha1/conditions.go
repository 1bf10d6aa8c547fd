package v1alpha1

// Condition types of a CommitRequest.
const (
	// ConditionAttributed is True once the author is stamped from the request.
	ConditionAttributed = "Attributed"
	// ConditionReconciling is True while the request is in progress.
	ConditionReconciling = "Reconciling"
	// ConditionReady summarises: True on a terminal outcome that is not a failure.
	ConditionReady = "Ready"
	// ConditionStalled is True on a failure that needs a person.
	ConditionStalled = "Stalled"
	// ConditionPushed is True once the carrying commit is on the remote.
	ConditionPushed = "Pushed"
)

// Reasons used in CommitRequest conditions.
const (
	ReasonRequestUser = "RequestUser"

	// In progress (Reconciling=True, Ready=False).
	ReasonWaitingForEdits      = "WaitingForEdits"
	ReasonWaitingForWindow     = "WaitingForWindow"
	ReasonWaitingForCloseDelay = "WaitingForCloseDelay"
	ReasonAwaitingPush         = "AwaitingPush"

	// Terminal, Ready=True.
	ReasonCommitted       = "Committed"
	ReasonNoWindowInGrace = "NoWindowInGrace"
	ReasonWindowMismatch  = "WindowMismatch"
	ReasonAlreadyPresent  = "AlreadyPresent"

	// Terminal, Ready=False and Stalled=True.
	ReasonCommitFailed  = "CommitFailed"
	ReasonPushFailed    = "PushFailed"
	ReasonTargetDeleted = "TargetDeleted"
	ReasonWorkerStopped = "WorkerStopped"

	// Pushed=True.
	ReasonPushed = "Pushed"
)

// Values of status.finalizedBy: which path closed the window.
const (
	FinalizedByCloseDelay   = "CloseDelay"
	FinalizedBySilenceTimer = "SilenceTimer"
	FinalizedByAuthorSwitch = "AuthorSwitch"
	FinalizedByBufferLimit  = "BufferLimit"
	FinalizedByResync       = "Resync"
	FinalizedByShutdown     = "Shutdown"
)
