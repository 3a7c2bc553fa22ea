---- MODULE LoaderLedgerEscalate ----
\* This project's variant for a cursor gone for good (src/model: Rules = "unifiedMinEscalate"):
\* the rules of LoaderLedgerRepairRetry ("unifiedMinRepairRetry"), except that the read a page
\* or repair failure's retry starts again must fail through the debt lattice.
\*
\* In LoaderLedgerPageRetry and LoaderLedgerRepairRetry, a page failure is retried by reading
\* that page again, a repair failure by resuming the repair at its failed read; and if that
\* read fails too, Fail may record a page or repair failure again (the loader's choice). A
\* page-token API whose cursor's item was deleted answers every read of that cursor with the
\* same error: the retry reads it again, it fails again, and so on for ever, while the view
\* waits. Nothing in those modules says the loader must break the cycle.
\*
\* Here the model remembers the read started again: resumed is that request while it is in
\* flight and its resumed read is unanswered (0 otherwise). ExplicitRetry's branch that starts
\* the failed work again (a finite read at epoch, or a chain at epoch) sets it; its branch by
\* a window move, a full read, does not. Fail(resumed) is the lattice's Fail (Churn!Fail: the
\* own failure, full debt), never a page or repair failure: the retry that follows reads the
\* full source, with fresh cursors. Any answer of the request clears resumed; for a chain,
\* which the loader reads in steps, so does ResumeAnswered: its first step, the read it
\* resumed at, was answered, so that cursor was not gone, and a later failure of the chain is
\* a repair failure again, resumed where it failed. A finite read is one read: its answer is
\* SettleFinite or Fail.
\*
\* No invariant sees the difference: every state reached here, resumed aside, is reached by
\* LoaderLedgerRepairRetry, whose Fail may escalate too. What it changes is progress when the
\* cursor is gone: loader-check --progress --gone-cursor fails every resumed read (and answers
\* every other read), takes no invalidation, and retries when only the host can; from every
\* reachable state owing something, coverEpoch rises or nothing is owed within 5 steps. Its
\* mutant mutantEscalateNever (the resumed read's failure recorded as a page or repair failure
\* again) retries the same read for ever: a cycle the check reports (make check).
\*
\* LoaderLedgerRepairRetry is instantiated, not extended, so that the changed actions keep their
\* names.
EXTENDS Naturals
CONSTANTS MaxEpoch, Ids, ModelBounds
VARIABLES epoch, debt, phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch,
          resumed

Repair == INSTANCE LoaderLedgerRepairRetry
Churn == INSTANCE LoaderLedgerChurn

vars == <<epoch, debt, phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch,
          resumed>>
Init == Repair!Init /\ resumed = 0

IssueFinite == Repair!IssueFinite /\ UNCHANGED resumed
Invalidate == Repair!Invalidate /\ UNCHANGED resumed
StartRepair == Repair!StartRepair /\ UNCHANGED resumed
StartFull == Repair!StartFull /\ UNCHANGED resumed

\* An answer of request i: resumed no longer names it.
Answered(i) == resumed' = IF resumed = i THEN 0 ELSE resumed

SettleFinite(i) == Repair!SettleFinite(i) /\ Answered(i)
SettleChain(i) == Repair!SettleChain(i) /\ Answered(i)
SettleFull(i) == Repair!SettleFull(i) /\ Answered(i)

\* A page or repair failure's retry: the branch that starts the failed work again (its debt
\* stays below full) remembers the request it starts.
ExplicitRetry ==
  /\ Repair!ExplicitRetry
  /\ resumed' = IF (failure = "page" \/ Repair!RepairFailed) /\ debt' # "full"
                THEN CHOOSE k \in Ids : req[k].st # "inflight" /\ req'[k].st = "inflight"
                ELSE resumed

\* The change: the resumed read's failure goes through the lattice, never as a page or repair
\* failure again.
Fail(i) ==
  IF i = resumed
  THEN Churn!Fail(i) /\ resumed' = 0
  ELSE Repair!Fail(i) /\ UNCHANGED resumed

\* The resumed chain's first read was answered: its cursor was not gone.
ResumeAnswered(i) ==
  /\ resumed = i /\ req[i].st = "inflight" /\ req[i].kind = "chain"
  /\ resumed' = 0
  /\ UNCHANGED <<epoch, debt, phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch>>

Next ==
  \/ IssueFinite \/ Invalidate \/ StartRepair \/ StartFull \/ ExplicitRetry
  \/ \E i \in Ids : SettleFinite(i) \/ SettleChain(i) \/ SettleFull(i) \/ Fail(i)
                    \/ ResumeAnswered(i)

Spec == Init /\ [][Next]_vars

TypeOK == Repair!TypeOK /\ resumed \in Ids \cup {0}
ChainHeld == Repair!ChainHeld
NoLeak == Repair!NoLeak
NoStrandedStaleFailure == Repair!NoStrandedStaleFailure
NoLostInvalidation == Repair!NoLostInvalidation
CoverageHeld == Repair!CoverageHeld
CommitStamped == Repair!CommitStamped
CommitReleases == Repair!CommitReleases
ChainCommitBoundedDebt == Repair!ChainCommitBoundedDebt
PageFailureQuiet == Repair!PageFailureQuiet
RepairFailureQuiet == Repair!RepairFailureQuiet
====
