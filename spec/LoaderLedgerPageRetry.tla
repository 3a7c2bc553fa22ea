---- MODULE LoaderLedgerPageRetry ----
\* This project's variant for failed pages (src/model: Rules = "unifiedMinPageRetry"): the
\* rules of LoaderLedgerChurn ("unifiedMinChurn"), except that a finite read's own failure,
\* while nothing else is owed, is retried by reading that page again.
\*
\* In LoaderLedger (every Rules value) and in LoaderLedgerChurn, Fail(i) of a finite read
\* nothing superseded records failure = "own" and raises debt to "full", so ExplicitRetry (the
\* loader's explicit and automatic retry) starts a full read: one failed page of the window
\* costs a read of the whole window.
\*
\* Here, when that read is of the current epoch and nothing else was owed or running when it
\* failed (phase = "idle", debt = "none", failure = "none"), Fail records failure = "page" and
\* leaves the debt at "none": the view is as current as before the read, and lacks one page.
\* IssueFinite, StartRepair and StartFull stay disabled (each needs failure = "none"), so the
\* view waits for the retry as it does for an own failure. ExplicitRetry of a page failure
\* releases the failed request and, in the same step, starts either a finite read at epoch (the
\* retry with the window where it was: the loader reads the same page, same cursor, direction
\* and until, since nothing else changed) or, as the lattice does, a full read with full debt
\* (the retry by a window move). Invalidate after a page failure turns it into the lattice's
\* own failure with full debt, exactly the state LoaderLedgerChurn's Fail would have left
\* before the same Invalidate: anything that changed since the failure goes through the debt
\* lattice as before. The window is not modelled: which branch a retry takes is the host's.
\*
\* Invariant: PageFailureQuiet, a page failure stands only while nothing is owed and the view
\* is current, so that reading the page again is all the retry owes. Without the demotion in
\* Invalidate (or with a page failure recorded for a read an invalidation overtook), a page
\* failure stands over bounded debt that no action repairs (StartRepair waits for the failure,
\* the page retry for no debt); every other invariant holds there, and the progress check's
\* start states record no failure, so only PageFailureQuiet among them shows the demotion
\* needed (loader-check's mutants mutantPageNoDemote and mutantPageOverDebt, make check). The
\* gone-cursor progress check (LoaderLedgerEscalate.tla), whose start states do record
\* failures, finds that state a deadlock too.
\*
\* LoaderLedgerChurn is instantiated, not extended, so that the changed actions keep their names.
EXTENDS Naturals
CONSTANTS MaxEpoch, Ids, ModelBounds
VARIABLES epoch, debt, phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch

Churn == INSTANCE LoaderLedgerChurn
Base == INSTANCE LoaderLedger WITH Rules <- "unifiedMin"

vars == Churn!vars
Init == Churn!Init

IssueFinite == Churn!IssueFinite
StartRepair == Churn!StartRepair
StartFull == Churn!StartFull
SettleFinite(i) == Churn!SettleFinite(i)
SettleChain(i) == Churn!SettleChain(i)
SettleFull(i) == Churn!SettleFull(i)

\* An invalidation since a page failure: the lattice's own failure, owing a full read.
Invalidate ==
  IF failure = "page"
  THEN /\ epoch < MaxEpoch /\ (ModelBounds => coverage # "full")
       /\ epoch' = epoch + 1 /\ failure' = "own" /\ debt' = "full"
       /\ UNCHANGED <<phase, chainEpoch, coverage, req, settledOnce, coverEpoch>>
  ELSE Churn!Invalidate

\* The change: a finite read's own failure with nothing else owed is a page failure.
PageFailure(i) ==
  /\ req[i].kind = "finite" /\ ~req[i].sup /\ req[i].ep = epoch
  /\ phase = "idle" /\ debt = "none" /\ failure = "none"

\* The loader may still record such a failure as the lattice does (Churn!Fail): it does so for
\* a stalled cursor, which reading the page again would not move.
Fail(i) ==
  \/ /\ req[i].st = "inflight" /\ PageFailure(i)
     /\ req' = [req EXCEPT ![i].st = "failed"]
     /\ failure' = "page"
     /\ UNCHANGED <<epoch, debt, phase, chainEpoch, coverage, settledOnce, coverEpoch>>
  \/ Churn!Fail(i)

\* A page failure's retry: the failed request is released, and the page is read again, or (a
\* window move) the full source is read, as the lattice's retry does.
ExplicitRetry ==
  IF failure = "page"
  THEN /\ phase = "idle" /\ debt = "none" /\ Base!Inflight("finite") = {}
       /\ failure' = "none"
       /\ LET cleared == [i \in Ids |-> IF req[i].st = "failed"
                                        THEN [req[i] EXCEPT !.st = "released"] ELSE req[i]]
          IN \E k \in {i \in Ids : cleared[i].st \in {"unused", "released"}} :
               \/ /\ req' = [cleared EXCEPT ![k] = Base!New("finite")]
                  /\ UNCHANGED <<epoch, debt, phase, chainEpoch, coverage, settledOnce, coverEpoch>>
               \/ /\ req' = [Base!Supersede(cleared) EXCEPT ![k] = Base!New("full")]
                  /\ phase' = "fullheld" /\ debt' = "full"
                  /\ UNCHANGED <<epoch, chainEpoch, coverage, settledOnce, coverEpoch>>
  ELSE Churn!ExplicitRetry

Next ==
  \/ IssueFinite \/ Invalidate \/ StartRepair \/ StartFull \/ ExplicitRetry
  \/ \E i \in Ids : SettleFinite(i) \/ SettleChain(i) \/ SettleFull(i) \/ Fail(i)

Spec == Init /\ [][Next]_vars

TypeOK == debt \in {"none", "bounded", "full"} /\ phase \in {"idle", "repair", "fullheld"}
          /\ failure \in {"none", "own", "superseded", "page"}
ChainHeld == Churn!ChainHeld
NoLeak == Churn!NoLeak
NoStrandedStaleFailure == Churn!NoStrandedStaleFailure
NoLostInvalidation == Churn!NoLostInvalidation
CoverageHeld == Churn!CoverageHeld
CommitStamped == Churn!CommitStamped
CommitReleases == Churn!CommitReleases
ChainCommitBoundedDebt == Churn!ChainCommitBoundedDebt
\* A page failure stands only while nothing is owed and the view is current.
PageFailureQuiet == failure = "page" => phase = "idle" /\ debt = "none" /\ coverEpoch = epoch
====
