"""What a JobSet's pods get at run time, from its manifest: the labels the
JobSet controller adds, the container's environment as the kubelet makes it
(the downward API's label fields, then `$(VAR)` references), and the argv a
`sh -c` command line ends up with. Used by deploy_specs_test.py and
kubernetes_job_test.py; needs nothing but the Python standard library.

Sources: the JobSet documentation ("JobSet labels": jobset-name and
replicatedjob-name on the Jobs and pods it makes); Kubernetes' expansion of
env values and commands (k8s.io/kubernetes third_party/forked/golang/expansion:
`$(VAR)` for a variable defined earlier in the list, `$$` for a literal `$`,
anything else left as written).
"""
import os
import re
import subprocess

JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"


def replicated_job(jobset, name):
    return next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == name)


def pod_template(jobset, name):
    return replicated_job(jobset, name)["template"]["spec"]["template"]


def pod_labels(jobset, rjob):
    """The labels a pod of replicated job `rjob` carries: its template's and
    the controller's."""
    labels = dict(pod_template(jobset, rjob)["metadata"].get("labels", {}))
    labels[JOBSET_NAME_LABEL] = jobset["metadata"]["name"]
    labels[REPLICATED_JOB_LABEL] = rjob
    return labels


def _expand(text, env):
    """Kubernetes' $(VAR) expansion of one string against `env`."""
    out, i = [], 0
    while i < len(text):
        if text.startswith("$$", i):
            out.append("$")
            i += 2
        elif text.startswith("$(", i) and ")" in text[i:]:
            end = text.index(")", i)
            name = text[i + 2:end]
            out.append(env[name] if name in env else text[i:end + 1])
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def _field(labels, name, path):
    m = re.fullmatch(r"metadata\.labels\['([^']+)'\]", path)
    if not m:
        raise ValueError(f"{name}: fieldRef {path!r} is not a label (the only kind resolved here)")
    if m.group(1) not in labels:
        # The kubelet would give "" and the names built from it would be wrong.
        raise ValueError(f"{name}: the pod has no label {m.group(1)!r}")
    return labels[m.group(1)]


def container_env(jobset, rjob, container):
    """The container's environment as the kubelet builds it, in order."""
    labels = pod_labels(jobset, rjob)
    env = {}
    for e in container.get("env", []):
        if "valueFrom" in e:
            ref = e["valueFrom"].get("fieldRef")
            if ref is None:
                raise ValueError(f"{e['name']}: only fieldRef is resolved here")
            env[e["name"]] = _field(labels, e["name"], ref["fieldPath"])
        else:
            env[e["name"]] = _expand(str(e.get("value", "")), env)
    return env


def command_argv(jobset, rjob, container, extra_env=None):
    """The argv the container's `sh -c` command line execs, run by this
    machine's sh with the pod's environment (exec replaced by printing
    each argument on its own line)."""
    env = {**container_env(jobset, rjob, container), **(extra_env or {})}
    command = [_expand(c, env) for c in container["command"]]
    if command[:2] != ["sh", "-c"]:
        return command
    script = command[2]
    if not script.startswith("exec "):
        raise ValueError("expected `sh -c 'exec ...'`")
    script = "printf '%s\\n' " + script[len("exec "):]
    result = subprocess.run(["sh", "-c", script], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
                            capture_output=True, text=True, timeout=10, check=True)
    return result.stdout.splitlines()
