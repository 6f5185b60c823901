// Plug-ins (schedulers, workloads, cost models, report formats) are
// registered by name; an unknown name is a Usage error with "did you mean".
#ifndef CAPPLAN_COMMON_REGISTRY_H_
#define CAPPLAN_COMMON_REGISTRY_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/did_you_mean.h"
#include "common/status.h"

namespace capplan {

// Registry<Factory> maps names to factories (any callable type). `kind` names
// what is registered ("scheduler") in error messages.
template <typename Factory>
class Registry {
 public:
  explicit Registry(std::string kind) : kind_(std::move(kind)) {}
  void Add(const std::string& name, Factory f, std::string help = "") {
    entries_[name] = Entry{std::move(f), std::move(help)};
  }
  Result<Factory> Find(const std::string& name) const {
    auto it = entries_.find(name);
    if (it == entries_.end()) {
      return Status::Usage("unknown " + kind_ + " '" + EchoValue(name) + "'" +
                           DidYouMean(name, Names()));
    }
    return it->second.factory;
  }
  std::vector<std::string> Names() const {
    std::vector<std::string> n;
    for (const auto& [k, v] : entries_) n.push_back(k);
    return n;
  }
  std::string Help(const std::string& name) const {
    auto it = entries_.find(name);
    return it == entries_.end() ? "" : it->second.help;
  }

 private:
  struct Entry {
    Factory factory;
    std::string help;
  };
  std::string kind_;
  std::map<std::string, Entry> entries_;
};

}  // namespace capplan

#endif  // CAPPLAN_COMMON_REGISTRY_H_
