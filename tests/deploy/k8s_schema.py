"""Kubernetes manifests checked against Kubernetes' own schemas: the API
models of Debian's python3-kubernetes (22.6, generated from Kubernetes 1.22's
OpenAPI definitions), which list every field of every object with its type
and refuse a missing required field. No cluster is needed, and the manifests
keep to fields that 1.22 already has, so they apply to any cluster since.

Custom resources (JobSet, PodMonitor) are not in those models: their own
fields are checked here against their Go API types, and what they embed from
Kubernetes (a JobTemplateSpec, a LabelSelector) against the models.
"""
import kubernetes.client as k8s

# kind -> model for the built-in objects the manifests use.
BUILTIN = {
    ("v1", "Service"): "V1Service",
    ("v1", "Secret"): "V1Secret",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("batch/v1", "Job"): "V1Job",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
}

# JobSet, jobset.x-k8s.io/v1alpha2: api/jobset/v1alpha2/jobset_types.go in
# github.com/kubernetes-sigs/jobset (commit 08dfbdfd6827, 2026-08-18).
JOBSET = {
    "JobSetSpec": {"replicatedJobs": ["ReplicatedJob"], "network": "Network", "successPolicy": "SuccessPolicy",
                   "failurePolicy": "FailurePolicy", "startupPolicy": "StartupPolicy", "suspend": "bool",
                   "coordinator": "object", "managedBy": "str", "ttlSecondsAfterFinished": "int",
                   "volumeClaimPolicies": ["object"]},
    "ReplicatedJob": {"name": "str", "groupName": "str", "template": "V1JobTemplateSpec", "replicas": "int",
                      "dependsOn": ["object"]},
    "Network": {"enableDNSHostnames": "bool", "subdomain": "str", "publishNotReadyAddresses": "bool"},
    "SuccessPolicy": {"operator": "SuccessOperator", "targetReplicatedJobs": ["str"]},
    "FailurePolicy": {"maxRestarts": "int", "restartStrategy": "str", "rules": ["object"]},
    "StartupPolicy": {"startupPolicyOrder": "StartupPolicyOrder"},
}
JOBSET_REQUIRED = {"ReplicatedJob": ["name", "template"], "SuccessPolicy": ["operator"],
                   "StartupPolicy": ["startupPolicyOrder"]}
JOBSET_ENUMS = {"SuccessOperator": {"All", "Any"}, "StartupPolicyOrder": {"AnyOrder", "InOrder"}}

# PodMonitor, monitoring.coreos.com/v1: pkg/apis/monitoring/v1/podmonitor_types.go
# in github.com/prometheus-operator/prometheus-operator (commit 6adcebc5076c, 2026-08-08).
PODMONITOR = {
    "PodMonitorSpec": {"jobLabel": "str", "podTargetLabels": ["str"], "podMetricsEndpoints": ["PodMetricsEndpoint"],
                       "selector": "V1LabelSelector", "selectorMechanism": "str", "namespaceSelector": "object",
                       "sampleLimit": "int", "targetLimit": "int", "scrapeProtocols": ["str"],
                       "labelLimit": "int", "attachMetadata": "object", "scrapeClass": "str"},
    "PodMetricsEndpoint": {"port": "str", "portNumber": "int", "targetPort": "object", "path": "str",
                           "scheme": "str", "params": "object", "interval": "str", "scrapeTimeout": "str",
                           "honorLabels": "bool", "honorTimestamps": "bool", "metricRelabelings": ["object"],
                           "relabelings": ["object"], "filterRunning": "bool"},
}
PODMONITOR_REQUIRED = {"PodMonitorSpec": ["podMetricsEndpoints", "selector"]}


class Checker:
    """Collects every schema violation, each with its path."""

    def __init__(self):
        self.errors = []

    def error(self, path, message):
        self.errors.append(f"{path}: {message}")

    # --- the Kubernetes models -------------------------------------------
    def model(self, value, type_name, path):
        if type_name == "str":
            if not isinstance(value, str):
                self.error(path, f"expected a string, got {value!r}")
        elif type_name == "int":
            if not isinstance(value, int) or isinstance(value, bool):
                self.error(path, f"expected an integer, got {value!r}")
        elif type_name == "bool":
            if not isinstance(value, bool):
                self.error(path, f"expected true or false, got {value!r}")
        elif type_name in ("object", "datetime"):
            pass
        elif type_name.startswith("list["):
            if not isinstance(value, list):
                self.error(path, "expected a list")
                return
            for i, item in enumerate(value):
                self.model(item, type_name[5:-1], f"{path}[{i}]")
        elif type_name.startswith("dict("):
            if not isinstance(value, dict):
                self.error(path, "expected a map")
                return
            inner = type_name[len("dict(str, "):-1]
            for key, item in value.items():
                # Resource quantities may be written as numbers (8, "8", 8Gi).
                if path.endswith((".limits", ".requests")) and isinstance(item, (int, float)):
                    continue
                self.model(item, inner, f"{path}.{key}")
        else:
            self.object(value, type_name, path)

    def object(self, value, type_name, path):
        cls = getattr(k8s, type_name)
        if not isinstance(value, dict):
            self.error(path, f"expected a {type_name} object")
            return
        by_json = {json_name: attr for attr, json_name in cls.attribute_map.items()}
        for key, item in value.items():
            if key not in by_json:
                self.error(f"{path}.{key}", f"not a field of {type_name}")
                continue
            self.model(item, cls.openapi_types[by_json[key]], f"{path}.{key}")

    def required(self, value, type_name, path):
        """The models' own checks: constructing one refuses a missing
        required field (and some enumerated values)."""
        try:
            k8s.ApiClient()._ApiClient__deserialize(value, type_name)
        except (ValueError, TypeError) as e:
            self.error(path, f"{type_name}: {e}")

    def builtin(self, doc, path):
        model = BUILTIN[(doc["apiVersion"], doc["kind"])]
        self.object(doc, model, path)
        self.required(doc, model, path)

    # --- custom resources ------------------------------------------------
    def custom(self, value, type_name, path, types, required, enums):
        if isinstance(type_name, list):
            if not isinstance(value, list):
                self.error(path, "expected a list")
                return
            for i, item in enumerate(value):
                self.custom(item, type_name[0], f"{path}[{i}]", types, required, enums)
        elif type_name in enums:
            if value not in enums[type_name]:
                self.error(path, f"{value!r} is not one of {sorted(enums[type_name])}")
        elif type_name in types:
            if not isinstance(value, dict):
                self.error(path, f"expected a {type_name} object")
                return
            for key, item in value.items():
                if key not in types[type_name]:
                    self.error(f"{path}.{key}", f"not a field of {type_name}")
                    continue
                self.custom(item, types[type_name][key], f"{path}.{key}", types, required, enums)
            for key in required.get(type_name, []):
                if key not in value:
                    self.error(f"{path}.{key}", f"required by {type_name}")
        elif type_name.startswith("V1"):
            self.object(value, type_name, path)
            self.required(value, type_name, path)
        else:
            self.model(value, type_name, path)

    def metadata_and_spec(self, doc, path):
        extra = set(doc) - {"apiVersion", "kind", "metadata", "spec"}
        if extra:
            self.error(path, f"unexpected top-level fields {sorted(extra)}")
        self.object(doc.get("metadata", {}), "V1ObjectMeta", f"{path}.metadata")
        if not doc.get("metadata", {}).get("name"):
            self.error(f"{path}.metadata.name", "required")

    def jobset(self, doc, path):
        self.metadata_and_spec(doc, path)
        self.custom(doc.get("spec"), "JobSetSpec", f"{path}.spec", JOBSET, JOBSET_REQUIRED, JOBSET_ENUMS)

    def podmonitor(self, doc, path):
        self.metadata_and_spec(doc, path)
        self.custom(doc.get("spec"), "PodMonitorSpec", f"{path}.spec", PODMONITOR, PODMONITOR_REQUIRED, {})

    def document(self, doc, path):
        key = (doc.get("apiVersion"), doc.get("kind"))
        if key in BUILTIN:
            self.builtin(doc, path)
        elif key == ("jobset.x-k8s.io/v1alpha2", "JobSet"):
            self.jobset(doc, path)
        elif key == ("monitoring.coreos.com/v1", "PodMonitor"):
            self.podmonitor(doc, path)
        else:
            self.error(path, f"no schema here for {key}")
