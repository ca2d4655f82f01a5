package boost

import (
	"fmt"

	"github.com/ppboost/ppboost/dataset"
)

// DataSpec says how to build a simulated run's data: where it comes from and
// how it is cut into owner shards, the data user's own data and a test set.
type DataSpec struct {
	// Source is a dataset.Named spec: synthetic, adult, fashion, csv:PATH, idx:IMAGES,LABELS.
	Source string
	// Owners is the total number of owners; 0 means: synthetic generates
	// OwnersPerRound*2*Rounds owners (room for as many retried attempts as
	// rounds), other sources use as many owners as the data fills.
	Owners          int
	SamplesPerOwner int
	// UserSamples is the size of the data user's own labelled data;
	// 0 means 5000 for synthetic and 1000 otherwise.
	UserSamples int
	// TestSamples is the test-set size when the source has no test split;
	// 0 means 50,000 for synthetic and 20% of the data otherwise.
	TestSamples int
	Seed        uint64
}

// Prepare loads or generates the data and cuts it (Cut). Owners, user and
// test data are disjoint. warn receives loader warnings (bounds inferred
// from private data).
func Prepare(s DataSpec, cfg Config, warn func(string)) (Data, error) {
	if s.SamplesPerOwner < 1 {
		return Data{}, fmt.Errorf("samples per owner must be at least 1, got %d", s.SamplesPerOwner)
	}
	s = s.withDefaults(cfg)
	train, test, err := dataset.Named(s.Source, s.Owners*s.SamplesPerOwner+s.UserSamples+s.TestSamples, s.Seed, warn)
	if err != nil {
		return Data{}, err
	}
	return Cut(train, test, s)
}

// withDefaults fills the zero sizes Prepare fills before loading: the data
// user's samples, and for synthetic data the owners and the test set.
func (s DataSpec) withDefaults(cfg Config) DataSpec {
	synthetic := s.Source == "synthetic"
	if s.UserSamples == 0 {
		s.UserSamples = 1000
		if synthetic {
			s.UserSamples = 5000
		}
	}
	if synthetic && s.Owners == 0 {
		s.Owners = cfg.OwnersPerRound * 2 * cfg.Rounds
	}
	if synthetic && s.TestSamples == 0 {
		s.TestSamples = 50000
	}
	return s
}

// Cut cuts loaded data as s says: a test set first (unless test is given),
// then the data user's s.UserSamples (which must be set), then s.Owners
// owners of s.SamplesPerOwner (0 owners: as many as the rest fills). train
// is shuffled with s.Seed first.
func Cut(train, test *dataset.Dataset, s DataSpec) (Data, error) {
	if s.SamplesPerOwner < 1 {
		return Data{}, fmt.Errorf("samples per owner must be at least 1, got %d", s.SamplesPerOwner)
	}
	if s.UserSamples < 1 {
		return Data{}, fmt.Errorf("the data user needs at least 1 sample, got %d", s.UserSamples)
	}
	user, owners, testN := s.UserSamples, s.Owners, s.TestSamples
	train = train.Shuffle(s.Seed)
	if test == nil {
		if testN == 0 {
			testN = train.Len() / 5
		}
		if testN >= train.Len() {
			return Data{}, fmt.Errorf("%s: %d samples cannot hold a test set of %d", s.Source, train.Len(), testN)
		}
		test, train = train.Split(testN)
	}
	if user >= train.Len() {
		return Data{}, fmt.Errorf("%s: %d training samples cannot hold the user's %d", s.Source, train.Len(), user)
	}
	userData, rest := train.Split(user)
	if owners == 0 {
		owners = rest.Len() / s.SamplesPerOwner
	}
	if owners < 1 || owners*s.SamplesPerOwner > rest.Len() {
		return Data{}, fmt.Errorf("%s: %d samples left for owners, cannot give %d owners %d samples each",
			s.Source, rest.Len(), owners, s.SamplesPerOwner)
	}
	sizes := make([]int, owners)
	for i := range sizes {
		sizes[i] = s.SamplesPerOwner
	}
	shards, err := rest.Partition(owners, sizes, s.Seed)
	if err != nil {
		return Data{}, err
	}
	return Data{Owners: shards, User: userData, Test: test}, nil
}
