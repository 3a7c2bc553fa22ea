---- MODULE LoaderLedgerChurn ----
\* This project's variant for progress under churn (src/model: Rules = "unifiedMinChurn"): the
\* rules of LoaderLedgerRecheck ("unifiedMinRecheck"), except that a repair an invalidation
\* overtook commits instead of settling stale.
\*
\* In LoaderLedger (every Rules value) and in LoaderLedgerRecheck, SettleChain(i) with
\* chainEpoch # epoch settles the chain and starts a replacement chain at epoch (P5); coverage,
\* coverEpoch and the settled requests are left alone. Under an invalidation that arrives
\* before every chain settles, coverEpoch never rises and settled chains pile up: the view
\* never refreshes and nothing is released.
\*
\* Here that case commits: the overtaken chain read the source after chainEpoch, so its data is
\* newer than the view's. coverage' = "chain", coverEpoch' = chainEpoch (the chain's own stamp,
\* not epoch), settledOnce' = TRUE, and every settled request stamped before chainEpoch is
\* released (the view switched to the chain's pages; Normalize's rule at coverEpoch'). In the
\* same step a new chain starts at epoch (chainEpoch' = epoch; phase stays "repair", debt stays
\* "bounded"), so it covers every invalidation that arrived meanwhile. A chain with debt =
\* "full" or a failure recorded is abandoned for a full read whatever its epoch, as
\* LoaderLedger abandons a current one: its pages cannot repair full debt, and replacing it
\* would only postpone the full read. SettleFull is LoaderLedgerRecheck's: an overtaken full
\* read already commits at its own epoch and leaves bounded debt.
\*
\* Invariants: the overtaken commit leaves phase = "repair", so ChainHeld, NoLeak and
\* NoLostInvalidation (all guarded by phase = "idle") do not see it. Four more, guarded by no
\* phase, do, and name what the commit must do:
\*   CoverageHeld (a state invariant): the request the coverage stands on, of its kind and
\*     stamped coverEpoch, is held; ChainHeld without its quiescence guard.
\*   CommitStamped, CommitReleases, ChainCommitBoundedDebt (step invariants, [][P]_vars,
\*     checked as PROPERTIES): a step that switches the coverage or its stamp settles a
\*     request of the coverage's kind, keeps it and stamps the coverage with its epoch; a
\*     chain's or full read's commit leaves nothing older than its stamp held; a chain commits
\*     over bounded debt only, with no failure recorded.
\* A commit over full debt reaches no state this module does not (the full debt comes from a
\* superseded read's failure, which may as well come just after the commit), so only a step
\* invariant can see it. loader-check checks all nine (make check), and its --progress check
\* shows that coverEpoch rises within a bounded number of system steps under an invalidation
\* after every step, which LoaderLedger's variants and LoaderLedgerRecheck fail. Each of the
\* four invariants holds under LoaderLedgerRecheck and every LoaderLedger variant too, but for
\* two controls, each broken where it was made to be: oldRetire, which releases the repair's
\* chain, breaks CoverageHeld as it breaks ChainHeld; unifiedMinNoNorm, without Normalize,
\* breaks CommitReleases as it breaks NoLeak.
\*
\* LoaderLedgerRecheck is instantiated, not extended, so that the changed action keeps its name.
EXTENDS Naturals
CONSTANTS MaxEpoch, Ids, ModelBounds
VARIABLES epoch, debt, phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch

Recheck == INSTANCE LoaderLedgerRecheck
Base == INSTANCE LoaderLedger WITH Rules <- "unifiedMin"

vars == Recheck!vars
Init == Recheck!Init

IssueFinite == Recheck!IssueFinite
Invalidate == Recheck!Invalidate
StartRepair == Recheck!StartRepair
StartFull == Recheck!StartFull
ExplicitRetry == Recheck!ExplicitRetry
SettleFinite(i) == Recheck!SettleFinite(i)

\* The change: an overtaken repair commits at its own epoch and a new chain starts at once.
SettleChain(i) ==
  IF req[i].st = "inflight" /\ req[i].kind = "chain" /\ chainEpoch # epoch
     /\ failure = "none" /\ debt # "full"
  THEN \E k \in Base!Free :
         /\ req' = [Base!Normalize([req EXCEPT ![i].st = "settled"], "idle", "none", chainEpoch)
                      EXCEPT ![k] = Base!New("chain")]
         /\ coverage' = "chain" /\ coverEpoch' = chainEpoch /\ settledOnce' = TRUE
         /\ chainEpoch' = epoch
         /\ UNCHANGED <<epoch, debt, phase, failure>>
  ELSE IF req[i].st = "inflight" /\ req[i].kind = "chain" /\ chainEpoch # epoch
  THEN \* failure or full debt: abandon for the full read, as for a current chain
       \E k \in Base!Free :
         /\ req' = [[req EXCEPT ![i].st = "settled"] EXCEPT ![k] = Base!New("full")]
         /\ phase' = "fullheld" /\ debt' = "full"
         /\ UNCHANGED <<epoch, chainEpoch, failure, coverage, settledOnce, coverEpoch>>
  ELSE Recheck!SettleChain(i)

SettleFull(i) == Recheck!SettleFull(i)
Fail(i) == Recheck!Fail(i)

Next ==
  \/ IssueFinite \/ Invalidate \/ StartRepair \/ StartFull \/ ExplicitRetry
  \/ \E i \in Ids : SettleFinite(i) \/ SettleChain(i) \/ SettleFull(i) \/ Fail(i)

Spec == Init /\ [][Next]_vars

TypeOK == Recheck!TypeOK
ChainHeld == Recheck!ChainHeld
NoLeak == Recheck!NoLeak
NoStrandedStaleFailure == Recheck!NoStrandedStaleFailure
NoLostInvalidation == Recheck!NoLostInvalidation

\* The kind of request whose settling establishes coverage c.
KindOf(c) == CASE c = "pages" -> "finite" [] c = "chain" -> "chain" [] c = "full" -> "full"
                  [] OTHER -> "none"
\* In every phase, the request the coverage stands on is held.
CoverageHeld == coverage # "nothing" =>
  \E i \in Ids : req[i].kind = KindOf(coverage) /\ req[i].ep = coverEpoch /\ req[i].st = "settled"
\* A step that changes the coverage or its stamp: a commit. The step invariants judge these.
CoverageSwitch == coverage' # coverage \/ coverEpoch' # coverEpoch
\* A commit settles a request of the new coverage's kind, keeps it, and is stamped with its epoch.
CommitStampedStep == CoverageSwitch =>
  \E i \in Ids : req[i].st = "inflight" /\ req'[i].st = "settled"
                /\ req[i].kind = KindOf(coverage') /\ req[i].ep = coverEpoch'
CommitStamped == [][CommitStampedStep]_vars
\* A chain's or a full read's commit releases everything held that is older than its stamp.
CommitReleasesStep == CoverageSwitch /\ coverage' \in {"chain", "full"} =>
  \A i \in Ids : req'[i].st = "settled" => req'[i].ep >= coverEpoch'
CommitReleases == [][CommitReleasesStep]_vars
\* A chain commits over bounded debt only, with no failure recorded: owing a full read, it is
\* abandoned for one.
ChainCommitBoundedDebtStep == CoverageSwitch /\ coverage' = "chain" =>
  debt = "bounded" /\ failure = "none"
ChainCommitBoundedDebt == [][ChainCommitBoundedDebtStep]_vars
====
