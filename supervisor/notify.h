/* notify.h — readiness and stopping notices to the service manager
 * (systemd's sd_notify protocol, deploy/systemd/streamvisor.service
 * Type=notify), without linking libsystemd. */
#ifndef SV_NOTIFY_H
#define SV_NOTIFY_H

/* Send state ("READY=1", "STOPPING=1", ...) to $NOTIFY_SOCKET. Returns 1
 * when sent, 0 when there is no socket to send to (not run by systemd), -1
 * on an error (errno set). thread: any */
int sv_notify(const char *state);

#endif
