package scoring

// noise.go owns the engine's noise floor: what `plexbench noise` measures
// (the same model, text and settings scored under changes that must not
// change quality — thread count, pass plan, kernel family — each against
// the default run's base) and the rule compare and the A/B verdict apply
// to it and to `floor`'s: a result within FloorFactor× a floor is one the
// measurement cannot tell from the engine's own noise.

// FloorFactor is how far above a measured floor (floor's or noise's) a
// mean KLD still counts as limited by it.
const FloorFactor = 2

// WithinFloor reports whether a mean KLD is within FloorFactor× floor.
func WithinFloor(meanKLD, floor float64) bool { return meanKLD <= FloorFactor*floor }

// NoiseReport is the report's noise object, written by `plexbench noise`.
type NoiseReport struct {
	Changes []NoiseChange `json:"changes"`
	// Skipped names changes that could not run on these settings, with why.
	Skipped []string `json:"skipped,omitempty"`
	// Floor is the largest mean KLD of the changes.
	Floor float64 `json:"floor"`
}

// NoiseChange is one change's run against the default run's base.
type NoiseChange struct {
	Change   string  `json:"change"`   // what changed, for people: "threads 1", "kernels: the Go twins"
	Settings string  `json:"settings"` // the profile settings it sets: "threads=1", "kernels=matmul.q8_0=go,…"
	MeanKLD  float64 `json:"mean_kld"`
	MaxKLD   float64 `json:"max_kld"`
	SameTop  float64 `json:"same_top"`
}

// NewNoiseReport is the noise object of the changes, its floor their
// largest mean KLD.
func NewNoiseReport(changes []NoiseChange, skipped []string) *NoiseReport {
	n := &NoiseReport{Changes: changes, Skipped: skipped}
	for _, c := range changes {
		n.Floor = max(n.Floor, c.MeanKLD)
	}
	return n
}
