package dpboost

// SubsetBounds exposes the cut points of the disjoint blocks of one
// ensemble of m trees over n items (rows here; owners in protocol/fedboost,
// which assigns whole owners to trees with the same geometric sizes):
// block j is [cut[j], cut[j+1]).
func SubsetBounds(method Method, eta float64, n, m int) []int { return subsetBounds(method, eta, n, m) }

// EnsembleTrees is the number of trees per ensemble of cfg (the last
// ensemble may be shorter): T_e for DPBoost, T for PARA, 1 for SEQ and NP.
func (c Config) EnsembleTrees() int { return c.ensembleSize() }

// Private reports whether the method adds noise (every method but NP).
func (c Config) Private() bool { return c.private() }
