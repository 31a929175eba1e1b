"""Vertex AI's CustomJobSpec as the API defines it, for checking
deploy/vertex/job.yaml without a Google Cloud account.

Facts from the API's own definitions, google/cloud/aiplatform/v1 in
github.com/googleapis/googleapis (commit f8291d2b89f0017ab078a4c7378069bae5686f6f,
2026-08-22): custom_job.proto (CustomJobSpec, WorkerPoolSpec, ContainerSpec,
PythonPackageSpec, Scheduling), machine_resources.proto (MachineSpec,
DiskSpec, NfsMount, LustreMount), env_var.proto (EnvVar),
accelerator_type.proto (AcceleratorType), io.proto (GcsDestination); and
from their comments and the REST reference:
  - workerPoolSpecs: "All worker pools except the first one are optional and
    can be skipped by providing an empty value";
  - WorkerPoolSpec.task is a oneof: containerSpec or pythonPackageSpec;
  - MachineSpec.machineType: "as part of WorkerPoolSpec this field is required";
  - ContainerSpec.env: "Maximum limit is 100"; imageUri is REQUIRED;
  - DiskSpec.bootDiskType: "pd-ssd", "pd-standard" or "hyperdisk-balanced";
  - gcloud ai custom-jobs create --config: "a YAML document containing a
    CustomJobSpec ... keys with underscore are invalid" (the JSON names,
    camelCase); the Python SDK takes the proto names (snake_case).
Field names here are the JSON (camelCase) spellings; types: "string",
"int32", "int64", "bool", "duration" (a string such as "3600s"), an enum or
message name, or a one-element list for a repeated field.
"""

MESSAGES = {
    "CustomJobSpec": {
        "persistentResourceId": "string",
        "workerPoolSpecs": ["WorkerPoolSpec"],
        "scheduling": "Scheduling",
        "serviceAccount": "string",
        "network": "string",
        "reservedIpRanges": ["string"],
        "pscInterfaceConfig": "object",
        "baseOutputDirectory": "GcsDestination",
        "protectedArtifactLocationId": "string",
        "tensorboard": "string",
        "enableWebAccess": "bool",
        "enableDashboardAccess": "bool",
        "experiment": "string",
        "experimentRun": "string",
        "models": ["string"],
    },
    "WorkerPoolSpec": {
        "containerSpec": "ContainerSpec",
        "pythonPackageSpec": "PythonPackageSpec",
        "machineSpec": "MachineSpec",
        "replicaCount": "int64",
        "nfsMounts": ["NfsMount"],
        "lustreMounts": ["LustreMount"],
        "diskSpec": "DiskSpec",
    },
    "ContainerSpec": {"imageUri": "string", "command": ["string"], "args": ["string"], "env": ["EnvVar"]},
    "PythonPackageSpec": {
        "executorImageUri": "string",
        "packageUris": ["string"],
        "pythonModule": "string",
        "args": ["string"],
        "env": ["EnvVar"],
    },
    "EnvVar": {"name": "string", "value": "string"},
    "MachineSpec": {
        "machineType": "string",
        "acceleratorType": "AcceleratorType",
        "acceleratorCount": "int32",
        "gpuPartitionSize": "string",
        "tpuTopology": "string",
        "reservationAffinity": "object",
    },
    "DiskSpec": {"bootDiskType": "string", "bootDiskSizeGb": "int32"},
    "NfsMount": {"server": "string", "path": "string", "mountPoint": "string"},
    "LustreMount": {"instanceIp": "string", "volumeHandle": "string", "filesystem": "string", "mountPoint": "string"},
    "Scheduling": {
        "timeout": "duration",
        "restartJobOnWorkerRestart": "bool",
        "strategy": "SchedulingStrategy",
        "disableRetries": "bool",
        "maxWaitDuration": "duration",
    },
    "GcsDestination": {"outputUriPrefix": "string"},
}

REQUIRED = {
    "CustomJobSpec": ["workerPoolSpecs"],
    "ContainerSpec": ["imageUri"],
    "PythonPackageSpec": ["executorImageUri", "packageUris", "pythonModule"],
    "EnvVar": ["name", "value"],
    "NfsMount": ["server", "path", "mountPoint"],
    "LustreMount": ["instanceIp", "volumeHandle", "filesystem", "mountPoint"],
    "GcsDestination": ["outputUriPrefix"],
}

ONEOF = {"WorkerPoolSpec": [("containerSpec", "pythonPackageSpec")]}

ENUMS = {
    "AcceleratorType": {
        "ACCELERATOR_TYPE_UNSPECIFIED", "NVIDIA_TESLA_K80", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_V100",
        "NVIDIA_TESLA_P4", "NVIDIA_TESLA_T4", "NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_L4",
        "NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB", "NVIDIA_H200_141GB", "NVIDIA_B200", "NVIDIA_GB200",
        "NVIDIA_RTX_PRO_6000", "TPU_V2", "TPU_V3", "TPU_V4_POD", "TPU_V5_LITEPOD",
    },
    "SchedulingStrategy": {"STRATEGY_UNSPECIFIED", "ON_DEMAND", "LOW_COST", "STANDARD", "SPOT", "FLEX_START"},
}

BOOT_DISK_TYPES = {"pd-ssd", "pd-standard", "hyperdisk-balanced"}
MAX_ENV = 100
INT32_MAX = 2**31 - 1


def snake_case(name):
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


def validate(value, type_name, path, errors, snake=False):
    """Appends to `errors` every way `value` breaks the schema of `type_name`.
    snake: field names in the proto's snake_case (the Python SDK)."""
    if isinstance(type_name, list):
        if not isinstance(value, list):
            errors.append(f"{path}: expected a list")
            return
        for i, item in enumerate(value):
            validate(item, type_name[0], f"{path}[{i}]", errors, snake)
        return
    if type_name == "string":
        if not isinstance(value, str):
            errors.append(f"{path}: expected a string, got {value!r}")
    elif type_name in ("int32", "int64"):
        # JSON carries int64 as a string too.
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (
            type_name == "int64" and isinstance(value, str) and value.lstrip("-").isdigit())
        if not ok or (type_name == "int32" and int(value) > INT32_MAX):
            errors.append(f"{path}: expected {type_name}, got {value!r}")
    elif type_name == "bool":
        if not isinstance(value, bool):
            errors.append(f"{path}: expected true or false, got {value!r}")
    elif type_name == "duration":
        if not (isinstance(value, str) and value.endswith("s")):
            errors.append(f"{path}: expected a duration such as '3600s', got {value!r}")
    elif type_name == "object":
        pass
    elif type_name in ENUMS:
        if value not in ENUMS[type_name]:
            errors.append(f"{path}: {value!r} is not a {type_name}")
    else:
        validate_message(value, type_name, path, errors, snake)


def validate_message(value, type_name, path, errors, snake):
    if not isinstance(value, dict):
        errors.append(f"{path}: expected a {type_name} object")
        return
    fields = MESSAGES[type_name]
    names = {snake_case(k) if snake else k: k for k in fields}
    for key, item in value.items():
        if key not in names:
            errors.append(f"{path}.{key}: not a field of {type_name} (fields: {', '.join(sorted(names))})")
            continue
        validate(item, fields[names[key]], f"{path}.{key}", errors, snake)
    for required in REQUIRED.get(type_name, []):
        key = snake_case(required) if snake else required
        if value.get(key) in (None, "", []):
            errors.append(f"{path}.{key}: required by {type_name}")
    for group in ONEOF.get(type_name, []):
        keys = [snake_case(k) if snake else k for k in group]
        if value and sum(k in value for k in keys) != 1:
            errors.append(f"{path}: exactly one of {', '.join(keys)}")


def validate_job_spec(spec, errors, snake=False):
    """The CustomJobSpec schema plus the rules the API states in prose."""
    validate(spec, "CustomJobSpec", "spec", errors, snake)
    key = (lambda k: snake_case(k)) if snake else (lambda k: k)
    pools = spec.get(key("workerPoolSpecs"), []) if isinstance(spec, dict) else []
    for i, pool in enumerate(pools):
        where = f"spec.{key('workerPoolSpecs')}[{i}]"
        if not pool:
            if i == 0:
                errors.append(f"{where}: the first pool may not be empty")
            continue
        machine = pool.get(key("machineSpec"), {})
        if not machine.get(key("machineType")):
            errors.append(f"{where}.{key('machineSpec')}.{key('machineType')}: required in a worker pool")
        if machine.get(key("acceleratorType")) and int(machine.get(key("acceleratorCount"), 0)) < 1:
            errors.append(f"{where}: an acceleratorType needs an acceleratorCount of at least 1")
        disk = pool.get(key("diskSpec"), {})
        if key("bootDiskType") in disk and disk[key("bootDiskType")] not in BOOT_DISK_TYPES:
            errors.append(f"{where}.{key('diskSpec')}: bootDiskType must be one of {sorted(BOOT_DISK_TYPES)}")
        env = pool.get(key("containerSpec"), {}).get("env", [])
        if len(env) > MAX_ENV:
            errors.append(f"{where}: {len(env)} environment variables, the API takes at most {MAX_ENV}")
        if int(pool.get(key("replicaCount"), 0)) < 1:
            errors.append(f"{where}.{key('replicaCount')}: a pool needs at least 1 replica")
    if pools and int(pools[0].get(key("replicaCount"), 0)) != 1:
        errors.append("spec.workerPoolSpecs[0]: the primary pool has exactly 1 replica")
