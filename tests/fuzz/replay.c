/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Seed replay: runs a fuzz target's LLVMFuzzerTestOneInput over every file of the corpus
 * directories given on the command line, so the seeds (and every crash we fixed, saved as a
 * seed) run as an ordinary test without libFuzzer. Prints TAP.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
        FILE *f = fopen(path, "rb");
        uint8_t *buf = NULL;
        long n;

        if (!f)
                return -errno;
        if (fseek(f, 0, SEEK_END) < 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) < 0) {
                fclose(f);
                return -EIO;
        }
        buf = malloc(n ? (size_t)n : 1);
        if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                fclose(f);
                return -EIO;
        }
        fclose(f);
        LLVMFuzzerTestOneInput(buf, (size_t)n);
        free(buf);
        return 0;
}

int main(int argc, char **argv) {
        unsigned n = 0, failed = 0;
        int i;

        for (i = 1; i < argc; ++i) {
                DIR *d = opendir(argv[i]);
                struct dirent *de;

                if (!d) {
                        printf("not ok %u - cannot open %s: %s\n", ++n, argv[i], strerror(errno));
                        ++failed;
                        continue;
                }
                while ((de = readdir(d))) {
                        char path[4096];

                        if (de->d_name[0] == '.')
                                continue;
                        snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
                        if (replay_file(path) < 0) {
                                printf("not ok %u - %s unreadable\n", ++n, path);
                                ++failed;
                        } else {
                                printf("ok %u - %s\n", ++n, path);
                        }
                }
                closedir(d);
        }
        printf("1..%u\n", n);
        return failed ? 1 : 0;
}
