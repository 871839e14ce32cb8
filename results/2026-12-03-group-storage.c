// Cost of adding a group of 12 small datasets to a parent group as the parent fills,
// under HDF5's default (old-style symbol table) storage and with link creation order
// tracked (new-style storage), for results/2026-12-02-results-scale.md.
//   gcc -O2 2026-12-03-group-storage.c -o grp $(pkg-config --cflags --libs hdf5)
//   ./grp N MODE FILE   (MODE 0: default, 1: tracked and indexed, 2: tracked)
// Prints the milliseconds per group of each fifth of the N groups.
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s N MODE FILE\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[1]);
  const int mode = atoi(argv[2]);
  if (n < 5 || mode < 0 || mode > 2) {
    fprintf(stderr, "N must be >= 5 and MODE 0, 1 or 2\n");
    return 2;
  }
  hid_t file = H5Fcreate(argv[3], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  if (mode == 1) H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
  if (mode == 2) H5Pset_link_creation_order(gcpl, H5P_CRT_ORDER_TRACKED);
  hid_t parent = H5Gcreate2(file, "configs", H5P_DEFAULT, mode ? gcpl : H5P_DEFAULT, H5P_DEFAULT);
  double data[64] = {0};
  double t0 = now();
  for (int i = 0; i < n; i++) {
    char name[80];  // names in a scrambled order, as hashed configuration ids arrive
    snprintf(name, sizeof name, "cfg-%08d-abcdefabcdefabcdef-strategy-global",
             (int)((long long)i * 7919 % n));
    hid_t g = H5Gcreate2(parent, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    for (int d = 0; d < 12; d++) {
      char dataset[16];
      snprintf(dataset, sizeof dataset, "d%d", d);
      hsize_t dims = 64;
      hid_t space = H5Screate_simple(1, &dims, NULL);
      hid_t set = H5Dcreate2(g, dataset, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                             H5P_DEFAULT);
      H5Dwrite(set, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, data);
      H5Dclose(set);
      H5Sclose(space);
    }
    H5Gclose(g);
    if ((i + 1) % (n / 5) == 0) {
      const double t = now();
      printf("%d: %.3f ms/group\n", i + 1, 1000 * (t - t0) / (n / 5));
      t0 = t;
      fflush(stdout);
    }
  }
  H5Gclose(parent);
  H5Pclose(gcpl);
  H5Fclose(file);
  return 0;
}
