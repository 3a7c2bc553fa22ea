---- MODULE LoaderLedgerRepairRetry ----
\* This project's variant for failed repairs (src/model: Rules = "unifiedMinRepairRetry"): the
\* rules of LoaderLedgerPageRetry ("unifiedMinPageRetry"), except that a repair's own failure,
\* while nothing else is owed, is retried by starting the repair again.
\*
\* In LoaderLedgerPageRetry (as in LoaderLedger and LoaderLedgerChurn), Fail(i) of a chain
\* records failure = "own" and raises debt to "full", so ExplicitRetry (the loader's explicit
\* and automatic retry) starts a full read: one failed read of a ranged repair near the window
\* costs a read of the whole window.
\*
\* Here, when the chain is the running repair of the current epoch, not overtaken
\* (chainEpoch = epoch), with only its own bounded debt owed and no failure recorded, Fail
\* records failure = "own" and leaves the debt "bounded": the repair's pages so far are as
\* current as when they were read, and the loader keeps them. No other rule reaches an own
\* failure over bounded debt (every other Fail raises the debt to "full"), so that pair is the
\* repair failure. IssueFinite, StartRepair and StartFull stay disabled (the first two need
\* failure = "none", the last full debt), so the view waits for the retry as it does for any
\* own failure. ExplicitRetry of a repair failure releases the failed request and, in the same
\* step, starts either a chain at epoch (the loader resumes the repair at its failed read) or,
\* as the lattice does, a full read with full debt (the retry by a window move). Invalidate
\* after a repair failure raises the debt to "full": the pages the repair read may have changed,
\* and the retry goes through the debt lattice as before.
\*
\* Invariant: RepairFailureQuiet, a repair failure stands only while its chain is current and
\* nothing runs, so that starting the repair again is all the retry owes. Without the rise in
\* Invalidate (or with a repair failure recorded for a chain an invalidation overtook) the retry
\* would restart a repair over pages that may have changed; only RepairFailureQuiet sees it
\* (loader-check's mutants mutantRepairNoDemote and mutantRepairOvertaken, make check).
\*
\* LoaderLedgerPageRetry is instantiated, not extended, so that the changed actions keep their
\* names.
EXTENDS Naturals
CONSTANTS MaxEpoch, Ids, ModelBounds
VARIABLES epoch, debt, phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch

Page == INSTANCE LoaderLedgerPageRetry
Base == INSTANCE LoaderLedger WITH Rules <- "unifiedMin"

vars == Page!vars
Init == Page!Init

IssueFinite == Page!IssueFinite
StartRepair == Page!StartRepair
StartFull == Page!StartFull
SettleFinite(i) == Page!SettleFinite(i)
SettleChain(i) == Page!SettleChain(i)
SettleFull(i) == Page!SettleFull(i)

\* A repair failure: the own failure over bounded debt.
RepairFailed == failure = "own" /\ debt = "bounded"

\* An invalidation since a repair failure: the retry owes a full read.
Invalidate ==
  IF RepairFailed
  THEN /\ epoch < MaxEpoch /\ (ModelBounds => coverage # "full")
       /\ epoch' = epoch + 1 /\ debt' = "full"
       /\ UNCHANGED <<phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch>>
  ELSE Page!Invalidate

\* The change: the running repair's own failure with nothing else owed.
RepairFailure(i) ==
  /\ req[i].kind = "chain" /\ ~req[i].sup /\ req[i].ep = epoch /\ chainEpoch = epoch
  /\ phase = "repair" /\ debt = "bounded" /\ failure = "none"

\* The loader may still record such a failure as the lattice does (Page!Fail).
Fail(i) ==
  \/ /\ req[i].st = "inflight" /\ RepairFailure(i)
     /\ req' = [req EXCEPT ![i].st = "failed"]
     /\ failure' = "own" /\ phase' = "idle"
     /\ UNCHANGED <<epoch, debt, chainEpoch, coverage, settledOnce, coverEpoch>>
  \/ Page!Fail(i)

\* A repair failure's retry: the failed request is released, and the repair starts again at
\* epoch, or (a window move) the full source is read, as the lattice's retry does.
ExplicitRetry ==
  IF RepairFailed
  THEN /\ phase = "idle" /\ Base!Inflight("chain") = {} /\ Base!Inflight("full") = {}
       /\ failure' = "none"
       /\ LET cleared == [i \in Ids |-> IF req[i].st = "failed"
                                        THEN [req[i] EXCEPT !.st = "released"] ELSE req[i]]
          IN \E k \in {i \in Ids : cleared[i].st \in {"unused", "released"}} :
               \/ /\ req' = [Base!Supersede(cleared) EXCEPT ![k] = Base!New("chain")]
                  /\ phase' = "repair" /\ chainEpoch' = epoch
                  /\ UNCHANGED <<epoch, debt, coverage, settledOnce, coverEpoch>>
               \/ /\ req' = [Base!Supersede(cleared) EXCEPT ![k] = Base!New("full")]
                  /\ phase' = "fullheld" /\ debt' = "full"
                  /\ UNCHANGED <<epoch, chainEpoch, coverage, settledOnce, coverEpoch>>
  ELSE Page!ExplicitRetry

Next ==
  \/ IssueFinite \/ Invalidate \/ StartRepair \/ StartFull \/ ExplicitRetry
  \/ \E i \in Ids : SettleFinite(i) \/ SettleChain(i) \/ SettleFull(i) \/ Fail(i)

Spec == Init /\ [][Next]_vars

TypeOK == Page!TypeOK
ChainHeld == Page!ChainHeld
NoLeak == Page!NoLeak
NoStrandedStaleFailure == Page!NoStrandedStaleFailure
NoLostInvalidation == Page!NoLostInvalidation
CoverageHeld == Page!CoverageHeld
CommitStamped == Page!CommitStamped
CommitReleases == Page!CommitReleases
ChainCommitBoundedDebt == Page!ChainCommitBoundedDebt
PageFailureQuiet == Page!PageFailureQuiet
\* A repair failure stands only while its chain is current and nothing runs.
RepairFailureQuiet ==
  RepairFailed => /\ phase = "idle" /\ chainEpoch = epoch
                  /\ Base!Inflight("chain") = {} /\ Base!Inflight("full") = {}
====
