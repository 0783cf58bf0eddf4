#!/bin/sh
# Build the two images every example and test uses, with no registry:
#
#   busybox:1.35               a shell and ~250 small tools (sh, httpd, wget,
#                              nc, sleep, hostname, nslookup...), laid out like
#                              the Docker Hub image of the same name
#   registry.k8s.io/pause:3.9  the pod infrastructure container: it only holds
#                              the pod's network namespace, sleeps until it is
#                              signalled, and exits 0 on SIGTERM
#
# Both come from Debian's statically linked busybox (package busybox-static)
# and `docker import`, which turns a tar of files into an image without a
# registry or a Dockerfile. The tags are the ones a learner reads in
# manifests on kubernetes.io, so the same manifests work online, where Docker
# would pull the real images, and offline, where these local ones are found
# first (their tags are not `latest`, so the pull policy is IfNotPresent).
#
# Idempotent: each image carries the sha256 of the busybox binary and of this
# script as a label, and is rebuilt only when one of them changed.
set -eu

BUSYBOX=${BUSYBOX:-/bin/busybox}
BUSYBOX_IMAGE=${BUSYBOX_IMAGE:-busybox:1.35}
PAUSE_IMAGE=${PAUSE_IMAGE:-registry.k8s.io/pause:3.9}

die() { echo "images: $*" >&2; exit 1; }

# `make images` runs this after .ci/setup-machine has installed Docker and
# busybox-static and started the engine; run by hand, it says what is missing.
command -v docker >/dev/null 2>&1 || die "the docker command is missing: run make images (as root it installs docker.io)"
docker info >/dev/null 2>&1 || die "no Docker engine answers (is dockerd running, and may this user use it?): make images says what to do"

# ldd fails on a statically linked binary ("not a dynamic executable").
is_static() { [ -x "$1" ] && ! ldd "$1" >/dev/null 2>&1; }

# A dynamic busybox (Debian's plain `busybox` package) would not run inside
# an image with no libc.
is_static "$BUSYBOX" || die "a statically linked busybox is needed at $BUSYBOX: run make images (as root it installs busybox-static)"

# What the images are made of; a change to either rebuilds them.
fingerprint="$(sha256sum "$BUSYBOX" "$0" | sha256sum | cut -c1-16)"

up_to_date() {
    [ "$(docker image inspect -f '{{ index .Config.Labels "groundup.fingerprint" }}' "$1" 2>/dev/null)" = "$fingerprint" ]
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# busybox: /bin/busybox plus one symlink per applet, as `busybox --install`
# would make, so `sh`, `httpd`, `wget`... are all on the PATH.
if up_to_date "$BUSYBOX_IMAGE"; then
    echo "images: $BUSYBOX_IMAGE is up to date"
else
    root="$work/busybox"
    mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/var/www" "$root/root"
    chmod 1777 "$root/tmp"
    cp "$BUSYBOX" "$root/bin/busybox"
    for applet in $("$BUSYBOX" --list); do
        [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$root/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' > "$root/etc/group"
    tar -C "$root" -c . | docker import \
        -c 'CMD ["sh"]' \
        -c 'ENV PATH=/bin' \
        -c "LABEL groundup.fingerprint=$fingerprint" \
        -m "built offline from Debian's busybox-static by 01-kubelet/images/build.sh" \
        - "$BUSYBOX_IMAGE" >/dev/null
    echo "images: built $BUSYBOX_IMAGE"
fi

# pause: only busybox, sh and sleep. The shell is PID 1, which the kernel
# shields from signals it has no handler for, so it traps TERM and INT and
# exits 0; `sleep & wait` keeps it responsive to them while it sleeps.
if up_to_date "$PAUSE_IMAGE"; then
    echo "images: $PAUSE_IMAGE is up to date"
else
    root="$work/pause"
    mkdir -p "$root/bin"
    cp "$BUSYBOX" "$root/bin/busybox"
    ln -s busybox "$root/bin/sh"
    ln -s busybox "$root/bin/sleep"
    tar -C "$root" -c . | docker import \
        -c 'ENTRYPOINT ["/bin/sh", "-c", "trap \"exit 0\" TERM INT; while :; do sleep 3600 & wait $!; done"]' \
        -c 'ENV PATH=/bin' \
        -c "LABEL groundup.fingerprint=$fingerprint" \
        -m "built offline from Debian's busybox-static by 01-kubelet/images/build.sh" \
        - "$PAUSE_IMAGE" >/dev/null
    echo "images: built $PAUSE_IMAGE"
fi
