#!/usr/bin/env python3
"""The reducer pod of deploy/kubernetes/training-jobset.yaml, run on one
machine from the spec as shipped (security context, Secret volume and its
mode, probes, resources), so that reducer_pod_test.sh exercises the real
spec, not a copy of it. Only what needs a cluster changes: the image
(REGISTRY/... becomes the locally built one) and the pod's name (the one the
JobSet gives reducer 0).

  reducer_pod_spec.py kube JOBSET IMAGE TOKEN [--publish NAME=PORT...]
      A Secret (train-job-token, as kustomization.yaml generates it) and the
      Pod, for `podman kube play`.
  reducer_pod_spec.py kubelet JOBSET IMAGE TOKEN DIR [--without-fsgroup]
      What the kubelet does with the pod's one container, for `podman run`:
      writes the Secret's files under DIR with the owner, group and mode the
      kubelet gives them, prints podman run's arguments (one a line).
  reducer_pod_spec.py probe JOBSET
      The container's readiness probe command (one argument a line).

Why two ways: podman (4.3 in Debian 12, and up to 5.x) ignores fsGroup, and
4.3 also ignores a Secret volume's defaultMode (its files are 0644), so
`kube play` cannot show what issue 31 found: a Secret file is root's, mode
0440, unreadable by user 10001 unless the pod sets fsGroup, which makes the
kubelet give the file that group and the process that supplementary group.
The `kubelet` form applies those documented rules to the spec's own fields;
--without-fsgroup is the test's control that the token is then unreadable.
"""
import argparse
import base64
import copy
import os
import sys

import yaml

SECRET_NAME = "train-job-token"  # kustomization.yaml's secretGenerator
SECRET_DEFAULT_MODE = 0o644  # Kubernetes' default for Secret volumes


def fail(message):
    sys.exit(f"reducer_pod_spec.py: {message}")


def reducer_template(path):
    """The pod template of the JobSet's `reducers` replicated job."""
    with open(path) as f:
        jobsets = [d for d in yaml.safe_load_all(f) if d and d.get("kind") == "JobSet"]
    if len(jobsets) != 1:
        fail(f"{path}: expected one JobSet, found {len(jobsets)}")
    jobset = jobsets[0]
    for job in jobset["spec"]["replicatedJobs"]:
        if job["name"] == "reducers":
            template = copy.deepcopy(job["template"]["spec"]["template"])
            # <jobset>-<replicatedJob>-<job index>-<pod index>, as the JobSet names it.
            return f"{jobset['metadata']['name']}-reducers-0-0", template
    fail(f"{path}: the JobSet has no replicated job named reducers")


def reducerd(spec):
    containers = spec["containers"]
    if [c["name"] for c in containers] != ["reducerd"]:
        fail("the reducer pod should have one container, reducerd")
    return containers[0]


def secret_volumes(spec):
    volumes = {v["name"]: v for v in spec.get("volumes", []) if "secret" in v}
    if [v["secret"]["secretName"] for v in volumes.values()] != [SECRET_NAME]:
        fail(f"the reducer pod should mount the Secret {SECRET_NAME} (and only it)")
    return volumes


def kube_yaml(args):
    name, template = reducer_template(args.jobset)
    spec = template["spec"]
    container = reducerd(spec)
    container["image"] = args.image
    for volume in secret_volumes(spec).values():
        # Kubernetes' default, said explicitly: podman 4.3 dereferences the
        # field unset and crashes.
        volume["secret"].setdefault("optional", False)
    # podman publishes every containerPort on the host, on the same port and
    # all addresses, unless hostPort says otherwise (Kubernetes publishes
    # none): loopback and free ports, so that runs do not collide.
    published = dict(p.split("=", 1) for p in args.publish)
    for port in container.get("ports", []):
        if port["name"] in published:
            port["hostPort"] = int(published.pop(port["name"]))
            port["hostIP"] = "127.0.0.1"
    if published:
        fail(f"the reducer container has no port named {', '.join(published)}")
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "labels": template.get("metadata", {}).get("labels", {})},
           "spec": spec}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET_NAME}, "type": "Opaque",
              "data": {"token": base64.b64encode(args.token.encode()).decode()}}
    yaml.safe_dump_all([secret, pod], sys.stdout, sort_keys=False)


def kubelet_run(args):
    """podman run's arguments for what the kubelet makes of the container."""
    _, template = reducer_template(args.jobset)
    spec = template["spec"]
    container = reducerd(spec)
    pod_sc = dict(spec.get("securityContext", {}))
    if args.without_fsgroup:
        pod_sc.pop("fsGroup", None)
    sc = container.get("securityContext", {})
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    group = sc.get("runAsGroup", pod_sc.get("runAsGroup"))
    fs_group = pod_sc.get("fsGroup")
    if user is None or group is None:
        fail("the reducer pod should set runAsUser and runAsGroup (the image's user is not checked here)")
    run = [f"--user={user}:{group}"]
    # The kubelet adds fsGroup and supplementalGroups to the process's groups.
    for extra in ([fs_group] if fs_group is not None else []) + pod_sc.get("supplementalGroups", []):
        run.append(f"--group-add={extra}")
    if sc.get("readOnlyRootFilesystem"):
        run.append("--read-only")
    if sc.get("allowPrivilegeEscalation") is False:
        run.append("--security-opt=no-new-privileges")
    for cap in sc.get("capabilities", {}).get("drop", []):
        run.append(f"--cap-drop={cap}")
    for cap in sc.get("capabilities", {}).get("add", []):
        run.append(f"--cap-add={cap}")
    seccomp = sc.get("seccompProfile", pod_sc.get("seccompProfile", {})).get("type")
    if seccomp not in ("RuntimeDefault", None):  # podman's default profile is the runtime's default
        fail(f"seccompProfile {seccomp} is not emulated here")
    memory = container.get("resources", {}).get("limits", {}).get("memory")
    if memory:
        run.append(f"--memory={memory.replace('Gi', 'g').replace('Mi', 'm')}")
    for env in container.get("env", []):
        if "value" not in env:
            fail(f"environment variable {env['name']} is not a plain value")
        run.append(f"--env={env['name']}={env['value']}")
    volumes = secret_volumes(spec)
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"])
        if volume is None:
            fail(f"volume {mount['name']} is not emulated here")
        folder = os.path.join(args.dir, mount["name"])
        os.makedirs(folder, mode=0o755, exist_ok=True)
        os.chmod(folder, 0o755)
        # The kubelet's files are root's; with fsGroup they get its group and
        # group read (pkg/volume: SetVolumeOwnership, read-only volume).
        mode = volume["secret"].get("defaultMode", SECRET_DEFAULT_MODE)
        gid = 0
        if fs_group is not None:
            gid, mode = fs_group, mode | 0o440
        path = os.path.join(folder, "token")
        with open(path, "w") as f:
            f.write(args.token)
        os.chown(path, 0, gid)
        os.chmod(path, mode)
        ro = ":ro" if mount.get("readOnly") else ""
        run.append(f"--volume={folder}:{mount['mountPath']}{ro}")
    run.append(args.image)
    run += container.get("command", []) + container.get("args", [])
    print("\n".join(run))


def probe(args):
    _, template = reducer_template(args.jobset)
    print("\n".join(reducerd(template["spec"])["readinessProbe"]["exec"]["command"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    kube = sub.add_parser("kube")
    kube.add_argument("jobset")
    kube.add_argument("image")
    kube.add_argument("token")
    kube.add_argument("--publish", action="append", default=[], metavar="NAME=PORT")
    kube.set_defaults(run=kube_yaml)
    kubelet = sub.add_parser("kubelet")
    kubelet.add_argument("jobset")
    kubelet.add_argument("image")
    kubelet.add_argument("token")
    kubelet.add_argument("dir")
    kubelet.add_argument("--without-fsgroup", action="store_true")
    kubelet.set_defaults(run=kubelet_run)
    prb = sub.add_parser("probe")
    prb.add_argument("jobset")
    prb.set_defaults(run=probe)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
