package compose

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// dockerCallTimeout bounds one docker CLI call.
const dockerCallTimeout = 60 * time.Second

// project is the compose project of the cluster (compose.sh's default).
func project() string {
	if p := os.Getenv("COMPOSE_PROJECT_NAME"); p != "" {
		return p
	}
	return "strata-compose"
}

// docker runs the docker CLI and returns its trimmed output.
func docker(ctx context.Context, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, dockerCallTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// container returns the id of service's container.
func container(ctx context.Context, svc string) (string, error) {
	id, err := docker(ctx, "ps", "-aq", "--filter", "label=com.docker.compose.project="+project(),
		"--filter", "label=com.docker.compose.service="+svc)
	if err != nil {
		return "", err
	}
	if id == "" || strings.Contains(id, "\n") {
		return "", fmt.Errorf("service %s: want one container of project %s, have %q", svc, project(), id)
	}
	return id, nil
}

// network is the Docker name of a compose network.
func network(name string) string { return project() + "_" + name }

// apply does f to its container; heal undoes it.
func apply(ctx context.Context, f fault, id string) error {
	var err error
	switch f.Kind {
	case faultKill:
		_, err = docker(ctx, "kill", id)
	case faultPause:
		_, err = docker(ctx, "pause", id)
	case faultDisconnect:
		_, err = docker(ctx, "network", "disconnect", "--force", network(f.Network), id)
	}
	return err
}

func heal(ctx context.Context, f fault, id, ip string) error {
	var err error
	switch f.Kind {
	case faultKill:
		_, err = docker(ctx, "start", id)
	case faultPause:
		_, err = docker(ctx, "unpause", id)
	case faultDisconnect:
		_, err = docker(ctx, "network", "connect", "--ip", ip, network(f.Network), id)
	}
	return err
}

// healAll brings every container back whatever state a failed run left
// it in: started, unpaused, on all its networks. Errors are reported,
// not returned: it is the cleanup of last resort.
func healAll(ctx context.Context, services []service, logf func(string, ...any)) {
	for _, s := range services {
		id, err := container(ctx, s.Name)
		if err != nil {
			logf("heal %s: %v", s.Name, err)
			continue
		}
		state, _ := docker(ctx, "inspect", "-f", "{{.State.Status}}", id)
		switch state {
		case "paused":
			_, err = docker(ctx, "unpause", id)
		case "exited", "created":
			_, err = docker(ctx, "start", id)
		}
		if err != nil {
			logf("heal %s: %v", s.Name, err)
		}
		nets, _ := docker(ctx, "inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} {{end}}", id)
		for n, ip := range s.Nets {
			if !strings.Contains(" "+nets+" ", " "+network(n)+" ") {
				if _, err := docker(ctx, "network", "connect", "--ip", ip, network(n), id); err != nil {
					logf("heal %s: %v", s.Name, err)
				}
			}
		}
	}
}
