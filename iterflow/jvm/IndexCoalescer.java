package io.iterflow;

import java.io.Serializable;

import org.apache.spark.Partition;
import org.apache.spark.rdd.PartitionCoalescer;
import org.apache.spark.rdd.PartitionGroup;
import org.apache.spark.rdd.RDD;

/**
 * Coalesces an RDD's partitions by index: group {@code i} of {@code n} takes every parent
 * partition {@code p} with {@code p % n == i}.
 *
 * Why: a frame hash-partitioned into {@code m = k * n} partitions holds in partition {@code p}
 * the rows with {@code pmod(hash, m) == p}, so the parents {@code p % n == i} hold exactly the
 * rows with {@code pmod(hash, n) == i}. Coalesced this way, the frame is hash-partitioned into
 * {@code n} without a shuffle: a scale-in that halves the partition count reads each cached
 * block once (local, or remote from the executor holding it) instead of hashing, writing and
 * fetching every row. Spark's own coalescer groups by locality or by index ranges, which keeps
 * no hash partitioning. No preferred location: tasks go where slots are (iterflow runs with
 * locality wait 0).
 */
public final class IndexCoalescer implements PartitionCoalescer, Serializable {
    private static final long serialVersionUID = 1L;

    @Override
    public PartitionGroup[] coalesce(int maxPartitions, RDD<?> parent) {
        Partition[] parents = parent.partitions();
        int n = Math.max(1, Math.min(maxPartitions, parents.length));
        PartitionGroup[] groups = new PartitionGroup[n];
        for (int i = 0; i < n; i++) {
            groups[i] = new PartitionGroup(scala.Option.<String>empty());
        }
        for (int p = 0; p < parents.length; p++) {
            groups[p % n].partitions().addOne(parents[p]);
        }
        return groups;
    }
}
