package problem

// Code is a problem code of the contract: its ProblemCode enum, which
// TestTableIsTheContract holds the table to. The package has its own type
// so that the core links no HTTP package; the faces convert.
type Code string

// The contract's problem codes.
const (
	Busy                  Code = "busy"
	CallLimitReached      Code = "call_limit_reached"
	Cancelled             Code = "cancelled"
	CeilingUnavailable    Code = "ceiling_unavailable"
	CommandFailed         Code = "command_failed"
	Contested             Code = "contested"
	HandleLimitReached    Code = "handle_limit_reached"
	HostNotAllowed        Code = "host_not_allowed"
	HostRefused           Code = "host_refused"
	InternalError         Code = "internal_error"
	InvalidInput          Code = "invalid_input"
	LabelLimitReached     Code = "label_limit_reached"
	MalformedPayload      Code = "malformed_payload"
	MethodNotAllowed      Code = "method_not_allowed"
	NotConfigured         Code = "not_configured"
	NotFound              Code = "not_found"
	OriginNotAllowed      Code = "origin_not_allowed"
	RateLimited           Code = "rate_limited"
	RequestTimeout        Code = "request_timeout"
	RequestTooLarge       Code = "request_too_large"
	ResultExists          Code = "result_exists"
	ResultNotFound        Code = "result_not_found"
	RouteNotFound         Code = "route_not_found"
	RunExists             Code = "run_exists"
	RunEnded              Code = "run_ended"
	RunLimitReached       Code = "run_limit_reached"
	RunNotFound           Code = "run_not_found"
	SchemaVersionMismatch Code = "schema_version_mismatch"
	StoreUnavailable      Code = "store_unavailable"
	Unauthorized          Code = "unauthorized"
	UnheldHandle          Code = "unheld_handle"
	UnsupportedMediaType  Code = "unsupported_media_type"
)

// Reason is why an input was refused: the contract's InputFaultReason
// enum, held to it as Code is.
type Reason string

// The contract's input fault reasons.
const (
	ConflictingFields Reason = "conflicting_fields"
	ControlCharacter  Reason = "control_character"
	DuplicateKey      Reason = "duplicate_key"
	EmptyBody         Reason = "empty_body"
	InvalidUtf8       Reason = "invalid_utf8"
	LeadingDash       Reason = "leading_dash"
	NotADate          Reason = "not_a_date"
	NotALookup        Reason = "not_a_lookup"
	NotInChoices      Reason = "not_in_choices"
	NotJson           Reason = "not_json"
	NullNotAllowed    Reason = "null_not_allowed"
	OneOfRequired     Reason = "one_of_required"
	OutOfRange        Reason = "out_of_range"
	PatternMismatch   Reason = "pattern_mismatch"
	Required          Reason = "required"
	TooDeep           Reason = "too_deep"
	TooLong           Reason = "too_long"
	TooShort          Reason = "too_short"
	UnknownField      Reason = "unknown_field"
	WrongType         Reason = "wrong_type"
)
