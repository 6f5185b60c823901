// sessions: multi-turn conversations (chat or agent loops). Turn k of a
// session sends the whole history -- an optional system prompt shared by
// every session, then each earlier turn's new user/tool tokens and output --
// plus its own new tokens; the next turn is issued `think_time_s` after this
// one completes (or, with `think_time_ms`, a time drawn for each turn from a
// length distribution in milliseconds: agent traces report a median and a
// long tail of tool and user time between turns). Content identity (which tokens equal which) is described by
// block ids (ContentBlocks in workload.h), so a prefix cache can find the
// shared system prompt and each session's own history.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "sim/workload/arrivals.h"
#include "sim/workload/length_dist.h"
#include "sim/workload/random.h"
#include "sim/workload/workload_kinds.h"

namespace capplan::sim {

namespace {


struct SessionDists {
  std::unique_ptr<LengthDist> turns, user, output;
  std::unique_ptr<LengthDist> think_ms;  // null: the fixed think_time_s
};

Status ReadThink(JsonObject& w, const std::string& dir, SessionDists* d) {
  if (!w.Has("think_time_ms")) return Status::Ok();
  if (w.Has("think_time_s")) {
    return w.Error("think_time_ms", "give think_time_s (fixed) or think_time_ms (a distribution), "
                                    "not both");
  }
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject think, w.Child("think_time_ms", true));
  CAPPLAN_ASSIGN_OR_RETURN(d->think_ms, ParseLengthDist(think, dir));
  return Status::Ok();
}

Status ReadDists(JsonObject& w, const std::string& dir, SessionDists* d) {
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject turns, w.Child("turns", true));
  CAPPLAN_ASSIGN_OR_RETURN(d->turns, ParseLengthDist(turns, dir));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject user, w.Child("user_tokens", true));
  CAPPLAN_ASSIGN_OR_RETURN(d->user, ParseLengthDist(user, dir));
  CAPPLAN_ASSIGN_OR_RETURN(JsonObject out, w.Child("output_tokens", true));
  CAPPLAN_ASSIGN_OR_RETURN(d->output, ParseLengthDist(out, dir));
  return ReadThink(w, dir, d);
}

// Session starts: closed (`sessions` concurrent: session s >= N starts when
// session s - N ends) or open (`session_rate` new sessions per second).
struct Starts {
  int64_t concurrent = 0;
  double rate = 0;
};

Status ReadStarts(JsonObject& w, Starts* s) {
  const bool closed = w.Has("sessions"), open = w.Has("session_rate");
  if (closed == open) {
    return w.Error("sessions",
                   "give exactly one of sessions (concurrent conversations) or session_rate "
                   "(new sessions per second)");
  }
  if (closed) {
    CAPPLAN_RETURN_IF_ERROR(w.Get("sessions", &s->concurrent, true));
    return w.CheckRange("sessions", static_cast<double>(s->concurrent), 1, 1e7);
  }
  CAPPLAN_RETURN_IF_ERROR(w.Get("session_rate", &s->rate, true));
  return w.CheckRange("session_rate", s->rate, 1e-6, 1e6);
}

// The scalar fields of a sessions workload.
struct SessionParams {
  int64_t num_sessions = 0, system_tokens = 0, block_tokens = 64;
  double think_s = 0;
  // An optional cap on the requests of the run (all kinds take one): the
  // sessions are generated in order and cut after this many requests.
  int64_t cap = kMaxRequests;
};

Status ReadSessionParams(JsonObject& w, SessionParams* p) {
  CAPPLAN_RETURN_IF_ERROR(w.Get("num_sessions", &p->num_sessions, true));
  CAPPLAN_RETURN_IF_ERROR(
      w.CheckRange("num_sessions", static_cast<double>(p->num_sessions), 1, 1e7));
  CAPPLAN_RETURN_IF_ERROR(w.Get("system_prompt_tokens", &p->system_tokens));
  CAPPLAN_RETURN_IF_ERROR(
      w.CheckRange("system_prompt_tokens", static_cast<double>(p->system_tokens), 0, 1e7));
  CAPPLAN_RETURN_IF_ERROR(w.Get("think_time_s", &p->think_s));
  CAPPLAN_RETURN_IF_ERROR(w.CheckRange("think_time_s", p->think_s, 0, 1e6));
  CAPPLAN_RETURN_IF_ERROR(w.Get("block_tokens", &p->block_tokens));
  CAPPLAN_RETURN_IF_ERROR(
      w.CheckRange("block_tokens", static_cast<double>(p->block_tokens), 1, 4096));
  if (w.Has("num_requests")) {
    CAPPLAN_RETURN_IF_ERROR(w.Get("num_requests", &p->cap));
    CAPPLAN_RETURN_IF_ERROR(
        w.CheckRange("num_requests", static_cast<double>(p->cap), 1, kMaxRequests));
  }
  return Status::Ok();
}

// Appends every session's turns to `out`, in session order, until the cap;
// first_of/last_of get each generated session's first and last request.
Status GenerateTurns(JsonObject& w, const SessionParams& p, const SessionDists& d, Workload* out,
                     std::vector<int64_t>* first_of, std::vector<int64_t>* last_of) {
  WorkloadRng turns_rng(out->seed, kSessionTurnsStream);
  WorkloadRng in_rng(out->seed, kInputLengthStream);
  WorkloadRng out_rng(out->seed, kOutputLengthStream);
  WorkloadRng think_rng(out->seed, kSessionThinkStream);
  const int64_t think_ns = std::llround(p.think_s * 1e9);
  for (int64_t s = 0; s < p.num_sessions && std::ssize(out->requests) < p.cap; ++s) {
    const int64_t turns = d.turns->Sample(turns_rng);
    int64_t history = p.system_tokens;
    first_of->push_back(static_cast<int64_t>(out->requests.size()));
    for (int64_t k = 0; k < turns && std::ssize(out->requests) < p.cap; ++k) {
      const int64_t id = static_cast<int64_t>(out->requests.size());
      if (id >= kMaxRequests) {
        return w.Error("num_sessions", "the sessions add up to more than 1e8 requests");
      }
      const int64_t user = d.user->Sample(in_rng), output = d.output->Sample(out_rng);
      if (history + user > kMaxRequestTokens) {
        return w.Error("turns", "session " + std::to_string(s) + " turn " + std::to_string(k) +
                                    " would send more than 1e9 tokens of history");
      }
      out->requests.push_back({id, 0, history + user, output});
      out->after.push_back(k == 0 ? -1 : id - 1);
      const int64_t think =
          k == 0 ? 0 : d.think_ms ? d.think_ms->Sample(think_rng) * 1'000'000 : think_ns;
      out->think_ns.push_back(think);
      out->session.push_back(s);
      history += user + output;
    }
    last_of->push_back(static_cast<int64_t>(out->requests.size()) - 1);
  }
  return Status::Ok();
}

// Closed: session s >= N starts when session s - N's last turn completes.
// Open: first turns arrive at `rate` sessions a second.
void StartSessions(const Starts& starts, const std::vector<int64_t>& first_of,
                   const std::vector<int64_t>& last_of, Workload* out) {
  const int64_t generated = std::ssize(first_of);
  if (starts.concurrent > 0) {
    for (int64_t s = starts.concurrent; s < generated; ++s) {
      out->after[static_cast<size_t>(first_of[s])] = last_of[s - starts.concurrent];
    }
    return;
  }
  WorkloadRng arrival_rng(out->seed, kArrivalStream);
  const std::vector<int64_t> arrivals =
      OpenLoopArrivalsNs(generated, starts.rate, 1.0, ArrivalConvention::kSglang, arrival_rng);
  for (int64_t s = 0; s < generated; ++s) {
    out->requests[static_cast<size_t>(first_of[s])].arrival_ns = arrivals[s];
  }
}

}  // namespace

Status LoadSessions(JsonObject& w, const std::string& dir, Workload* out) {
  Starts starts;
  CAPPLAN_RETURN_IF_ERROR(ReadStarts(w, &starts));
  SessionParams p;
  CAPPLAN_RETURN_IF_ERROR(ReadSessionParams(w, &p));
  SessionDists d;
  CAPPLAN_RETURN_IF_ERROR(ReadDists(w, dir, &d));
  std::vector<int64_t> first_of, last_of;
  CAPPLAN_RETURN_IF_ERROR(GenerateTurns(w, p, d, out, &first_of, &last_of));
  StartSessions(starts, first_of, last_of, out);
  out->shared_prefix_tokens = p.system_tokens;
  out->prefix_block_tokens = p.block_tokens;
  std::ostringstream os;
  os << "sessions=" << p.num_sessions << " turns=" << d.turns->Describe()
     << " user=" << d.user->Describe() << " output=" << d.output->Describe()
     << " system_prompt=" << p.system_tokens << " think=";
  if (d.think_ms) {
    os << d.think_ms->Describe() << "ms";
  } else {
    os << p.think_s << "s";
  }
  if (starts.concurrent > 0) {
    os << " concurrent=" << starts.concurrent;
  } else {
    os << " session_rate=" << starts.rate << "/s";
  }
  out->source = os.str();
  return Status::Ok();
}

}  // namespace capplan::sim
