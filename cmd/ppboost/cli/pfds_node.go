package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	bp "github.com/ppboost/ppboost/boost/pfds"
	"github.com/ppboost/ppboost/crypto/rng"
	"github.com/ppboost/ppboost/dataset"
	"github.com/ppboost/ppboost/node"
	"github.com/ppboost/ppboost/protocol"
	"github.com/ppboost/ppboost/protocol/pfds"
)

// nodeFlags are the libp2p flags of pfds agent and pfds announce.
type nodeFlags struct {
	key, listen, bootstrap string
}

func (n *nodeFlags) register(fs interface {
	StringVar(*string, string, string, string)
}) {
	fs.StringVar(&n.key, "key", "", "identity key file (ppboost keygen)")
	fs.StringVar(&n.listen, "listen", "/ip4/0.0.0.0/tcp/0", "listen multiaddrs, comma-separated")
	fs.StringVar(&n.bootstrap, "bootstrap", "", "full multiaddrs (with /p2p/ID) to dial, comma-separated")
}

// host starts the node, logging to log: one logger per process for the
// node and the role (two loggers on one writer would each hold their own
// lock and write to it at once).
func (n *nodeFlags) host(ctx context.Context, log hclog.Logger, tweak ...func(*node.Config)) (*node.Host, error) {
	if n.key == "" {
		return nil, usagef("-key is required")
	}
	c := node.DefaultConfig()
	c.KeyFile = n.key
	c.ListenAddrs = pfdsSplitList(n.listen)
	c.Bootstrap = pfdsSplitList(n.bootstrap)
	c.MaxMessage = pfds.MaxMessage + 4096
	c.Logger = log
	for _, f := range tweak {
		f(&c)
	}
	return node.New(ctx, c)
}

func pfdsSplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// loadAgentData resolves -data and -shard i/n (the non-IID shard i of n on
// -split-attr, from -seed).
func loadAgentData(df *dataFlags, errOut io.Writer, shard, attr string, seed uint64) (*dataset.Dataset, *bp.Domain, bp.Local, error) {
	d, _, err := df.load(errOut, 0, seed)
	if err != nil {
		return nil, nil, bp.Local{}, err
	}
	dom, err := bp.NewDomain(d)
	if err != nil {
		return nil, nil, bp.Local{}, err
	}
	l := bp.Local{X: d.X, Y: d.Y}
	if shard == "" {
		return d, dom, l, nil
	}
	is, ns, ok := strings.Cut(shard, "/")
	i, err1 := strconv.Atoi(is)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return nil, nil, bp.Local{}, usagef("-shard %q: want i/n with 0 <= i < n", shard)
	}
	a, err := splitAttr(dom, attr)
	if err != nil {
		return nil, nil, bp.Local{}, err
	}
	parts, err := bp.NonIID(dom, d.X, n, a, seed)
	if err != nil {
		return nil, nil, bp.Local{}, err
	}
	var s bp.Local
	for _, k := range parts[i] {
		s.X, s.Y = append(s.X, d.X[k]), append(s.Y, d.Y[k])
	}
	return d, dom, s, nil
}

// runPFDSAgent runs one agent node until its session is done, then trains
// its predictor on its data plus the shares.
func runPFDSAgent(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("pfds agent", "pfds agent -key FILE -announcer PEERID -ledger FILE [flags]", errOut)
	var nf nodeFlags
	nf.register(fs)
	var lf logFlags
	lf.register(fs)
	announcer := fs.String("announcer", "", "peer id of the announcer whose sessions this agent joins")
	var df dataFlags
	df.register(fs, "adult", "adult | csv:PATH (or PATH.csv)")
	shard := fs.String("shard", "", "use the non-IID shard i/n of -data (demo and tests); empty = all rows")
	attr := fs.String("split-attr", "", "attribute of the -shard split (default: age if the data has it, else its first numeric attribute)")
	seed := fs.Uint64("seed", 1, "seed of the -shard split (the agent's noise is always from the secure source)")
	ledger := fs.String("ledger", "", "budget ledger file (fsynced; created if missing)")
	budget := fs.Float64("budget", 1, "lifetime privacy budget recorded in the ledger")
	resetMark := fs.Bool(resetMarkFlag, false, resetMarkUsage)
	lambda := fs.Float64("lambda", 1e-3, "L2 weight of the final ERM")
	wait := fs.Duration("wait", 2*time.Minute, "exit with status 4, saying why, when no announcement arrives within this time; 0 waits forever")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *announcer == "" {
		return usagef("-announcer is required")
	}
	if *ledger == "" {
		return usagef("-ledger is required")
	}
	d, dom, local, err := loadAgentData(&df, errOut, *shard, *attr, *seed)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log, err := lf.logger("pfds-agent", errOut)
	if err != nil {
		return err
	}
	h, err := nf.host(ctx, log)
	if err != nil {
		return err
	}
	defer h.Close()
	led, err := openLedger(*ledger, *budget, *resetMark, "-", log.Named("ledger"))
	if err != nil {
		return err
	}
	a, err := pfds.NewAgent(pfds.Config{ID: h.ID(), Announcer: protocol.PeerID(*announcer), Domain: dom, Schema: d.Schema.Digest(),
		Data: local, Ledger: led, Rand: rng.Secure(), Log: log.Named("agent")})
	if err != nil {
		return err
	}
	drv, err := pfds.Start(h, a, log)
	if err != nil {
		return err
	}
	defer drv.Close()
	fmt.Fprintf(out, "pfds agent %s: %d rows, listening on %s\n", h.ID(), len(local.X), strings.Join(h.Addrs(), ","))
	var waitC <-chan time.Time
	if *wait > 0 {
		waitC = time.After(*wait)
	}
	for waiting := true; waiting; {
		select {
		case <-ctx.Done():
			return fmt.Errorf("interrupted")
		case <-waitC:
			var idle bool
			drv.Agent(func(a *pfds.Agent) { idle = a.State() == pfds.StateIdle })
			if idle {
				why := "is -announcer right, and is the announcer running?"
				if err := h.BootstrapErr(); err != nil {
					why = err.Error()
				}
				return refusedError{fmt.Errorf("no announcement from %s within %v: %s", *announcer, *wait, why)}
			}
		case <-drv.Done():
			waiting = false
		}
	}
	var report string
	var oc protocol.Outcome
	var refused, trainErr error
	drv.Agent(func(a *pfds.Agent) {
		oc = a.Outcome()
		if a.State() == pfds.StateFailed {
			if a.Refused {
				refused = fmt.Errorf("refused session %s: %w", a.Announcement().Session, a.Err)
			}
			return
		}
		m, err := a.Train(*lambda)
		if err != nil {
			trainErr = err
			return
		}
		own := testError(local, m.Class)
		report = fmt.Sprintf("session %s done: %d shares from %d roster agents; ledger spent %.4g of %.4g; %s training error on own data %.4f",
			a.Announcement().Session, len(a.Shares()), len(a.Announcement().Roster), led.Spent(), led.Budget(), a.Announcement().Learner, own)
	})
	if refused != nil {
		return refusedError{refused}
	}
	// This agent's outcome: complete, partial (the data timeout fired with
	// shares missing; it trains on what arrived) or failed.
	protocol.LogOutcome(log, oc)
	if trainErr != nil {
		return trainErr
	}
	if oc.Kind == protocol.OutcomeFailed {
		return oc.Err()
	}
	fmt.Fprintln(out, report)
	return oc.Err() // complete 0, partial 3
}

// pubsubMeshHigh is gossipsub's default D_hi (node.Config.MeshHigh).
const pubsubMeshHigh = 12

// runPFDSAnnounce publishes one session's announcement once the roster is
// subscribed, and waits -linger for the agents to finish.
func runPFDSAnnounce(args []string, out, errOut io.Writer) error {
	fs := newFlagSet("pfds announce", "pfds announce -key FILE -roster ID,ID,... [flags]", errOut)
	var nf nodeFlags
	nf.register(fs)
	var lf logFlags
	lf.register(fs)
	roster := fs.String("roster", "", "agent peer ids (pfds agent, or owner --pfds), comma-separated")
	session := fs.String("session", "", "session id (default: pfds-<unix nanoseconds>)")
	var df dataFlags
	df.register(fs, "adult", "data whose public schema the agents must hold: adult | csv:PATH (or PATH.csv)")
	d := bp.DefaultParams()
	eps := new(float64)
	epsVar(fs, eps, "eps", d.Eps, "every agent's budget for the session")
	hmax := fs.Int("hmax", d.HMax, "tree levels h_max")
	t := fs.Int("t", d.T, "candidate split values")
	p := fs.Int("p", d.P, "post-processing levels")
	v := bp.DefaultVariant()
	maxLeaves := fs.Int("max-leaves", d.MaxLeaves, fmt.Sprintf("public cap on a tree's leaves (default %d with --variant pfds-cv)", v.MaxLeaves))
	variant := fs.String("variant", "pfds-cv", "pfds-cv (the variant that learns) | pfds (the paper's algorithm)")
	threshold := fs.Float64("threshold", v.Threshold, "pfds-cv: a leaf whose noisy total is below threshold/eps gets no rows and no vote")
	sample := fs.Bool("sample", v.Sample, "pfds-cv: labels drawn from the pooled counts (false: their argmax)")
	learner := fs.String("learner", "logreg", "final ERM: logreg | svm")
	timeout := fs.Duration("timeout", 30*time.Second, "tree and data phase timeouts")
	linger := fs.Duration("linger", 10*time.Second, "how long to stay up after announcing (agents relay through the mesh)")
	if err := parse(fs, args); err != nil {
		return err
	}
	ids := pfdsSplitList(*roster)
	if len(ids) == 0 {
		return usagef("-roster is required")
	}
	params := bp.Params{Eps: *eps, HMax: *hmax, T: *t, P: *p, MaxLeaves: *maxLeaves, Optimize: true}
	var cv *bp.VariantParams
	switch *variant {
	case "pfds-cv":
		cv = &bp.VariantParams{Eps: *eps, HMax: *hmax, MaxLeaves: *maxLeaves, Threshold: *threshold, Sample: *sample}
		if !isFlagSet(fs, "max-leaves") {
			cv.MaxLeaves = v.MaxLeaves
		}
		if err := cv.Validate(); err != nil {
			return usageError{err}
		}
		params = pfds.VariantParams(*cv)
	case "pfds":
		if isFlagSet(fs, "threshold") || isFlagSet(fs, "sample") {
			return usagef("--threshold and --sample are PFDS-cv's: they need --variant pfds-cv")
		}
	default:
		return usagef("--variant %q: want pfds-cv or pfds (a session runs one of the two)", *variant)
	}
	if err := params.Validate(); err != nil {
		return usageError{err}
	}
	l, err := bp.ParseLearner(*learner)
	if err != nil || l == bp.LinReg {
		return usagef("-learner %q: want logreg or svm", *learner)
	}
	ds, _, err := df.load(errOut, 0, 1)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log, err := lf.logger("pfds-announce", errOut)
	if err != nil {
		return err
	}
	// The agents may be connected to the announcer only (owners that
	// bootstrap to it): it keeps every one of them in its gossipsub mesh,
	// so each gets every tree and data share at once, not by gossip.
	h, err := nf.host(ctx, log, func(c *node.Config) {
		c.ExpectedPeers = max(c.ExpectedPeers, len(ids)+8)
		if len(ids) > pubsubMeshHigh {
			c.MeshHigh = len(ids)
		}
	})
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.Join(pfds.Topic); err != nil {
		return err
	}
	fmt.Fprintf(out, "pfds announcer %s listening on %s; waiting for %d agents\n", h.ID(), strings.Join(h.Addrs(), ","), len(ids))
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	err = h.WaitTopicPeers(wctx, pfds.Topic, len(ids))
	cancel()
	if err != nil {
		return fmt.Errorf("agents not subscribed: %w", err)
	}
	time.Sleep(1500 * time.Millisecond) // one gossipsub heartbeat for the mesh
	if *session == "" {
		*session = fmt.Sprintf("pfds-%d", time.Now().UnixNano())
	}
	var r []protocol.PeerID
	for _, id := range ids {
		r = append(r, protocol.PeerID(id))
	}
	ms := uint32(timeout.Milliseconds())
	msg := pfds.EncodeAnnounce(h.ID(), &pfds.Announce{Session: *session, Params: params, CV: cv, Learner: l, RosterAddrs: pfds.RosterAddrsOf(h, r),
		SchemaDigest: ds.Schema.Digest(), Roster: r, TreeTimeout: ms, DataTimeout: ms})
	if err := h.Publish(ctx, pfds.Topic, msg); err != nil {
		return err
	}
	fmt.Fprintf(out, "announced %s session %s to %d agents (eps %g, h_max %d)\n", *variant, *session, len(ids), *eps, *hmax)
	select {
	case <-ctx.Done():
	case <-time.After(*linger):
	}
	return nil
}
