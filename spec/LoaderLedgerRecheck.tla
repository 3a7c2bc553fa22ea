---- MODULE LoaderLedgerRecheck ----
\* This project's variant of LoaderLedger (src/model: Rules = "unifiedMinRecheck"): the
\* module's unifiedMin rules, except that a full-source read an invalidation overtook
\* (ep < epoch) leaves debt = "bounded", so a repair follows and no invalidation is lost.
\* LoaderLedger is instantiated, not extended, so that the changed action keeps its name
\* (SettleFull) and both modules' Next name the same actions.
EXTENDS Naturals
CONSTANTS MaxEpoch, Ids, ModelBounds
\* ModelBounds: keep the coverage # "full" guards of IssueFinite and Invalidate (src/model's
\* model_bounds). The ledger accepts an invalidation in any state, so `make check` and the
\* refinement check drop them.
VARIABLES epoch, debt, phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch

Base == INSTANCE LoaderLedger WITH Rules <- "unifiedMin"

vars == Base!vars
Init == Base!Init

IssueFinite ==
  /\ phase = "idle" /\ debt = "none" /\ failure = "none" /\ (ModelBounds => coverage # "full")
  /\ Base!Inflight("finite") = {}
  /\ \E i \in Base!Free : req' = [req EXCEPT ![i] = Base!New("finite")]
  /\ UNCHANGED <<epoch, debt, phase, chainEpoch, failure, coverage, settledOnce, coverEpoch>>

Invalidate ==
  /\ epoch < MaxEpoch /\ (ModelBounds => coverage # "full")
  /\ epoch' = epoch + 1
  /\ debt' = IF debt = "none" /\ settledOnce /\ phase = "idle" THEN "bounded"
             ELSE IF debt = "none" THEN "full" ELSE debt
  /\ UNCHANGED <<phase, chainEpoch, failure, coverage, req, settledOnce, coverEpoch>>

StartRepair == Base!StartRepair
StartFull == Base!StartFull
ExplicitRetry == Base!ExplicitRetry
SettleFinite(i) == Base!SettleFinite(i)
SettleChain(i) == Base!SettleChain(i)

\* The change: the coverage a full read establishes is stamped with its own epoch, so an
\* invalidation that arrived while it was in flight is still owed, as bounded debt.
SettleFull(i) ==
  /\ req[i].st = "inflight" /\ req[i].kind = "full"
  /\ req' = Base!Normalize([req EXCEPT ![i].st = "settled"], "idle", "none", req[i].ep)
  /\ phase' = "idle" /\ debt' = IF req[i].ep < epoch THEN "bounded" ELSE "none"
  /\ coverage' = "full" /\ failure' = "none"
  /\ settledOnce' = TRUE /\ coverEpoch' = req[i].ep
  /\ UNCHANGED <<epoch, chainEpoch>>

Fail(i) == Base!Fail(i)

Next ==
  \/ IssueFinite \/ Invalidate \/ StartRepair \/ StartFull \/ ExplicitRetry
  \/ \E i \in Ids : SettleFinite(i) \/ SettleChain(i) \/ SettleFull(i) \/ Fail(i)

Spec == Init /\ [][Next]_vars

TypeOK == Base!TypeOK
ChainHeld == Base!ChainHeld
NoLeak == Base!NoLeak
NoStrandedStaleFailure == Base!NoStrandedStaleFailure
\* Quiescent with no debt means the coverage is of the current epoch: no invalidation was lost.
NoLostInvalidation == (phase = "idle" /\ debt = "none") => coverEpoch = epoch
====
