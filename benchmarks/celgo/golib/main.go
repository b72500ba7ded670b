// Package main is a benchmark-only shared library: the real cel-go with OCM's own placement CEL environment
// (open-cluster-management.io/sdk-go's ManagedClusterLib and JsonLib on its base options, with its cost
// estimator and the Kubernetes per-call limit), called from Python through ctypes to compare it with the
// project's evaluator. The product never loads it.
package main

/*
#include <stdlib.h>
*/
import "C"

import (
	"encoding/json"
	"strings"
	"sync"
	"unsafe"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/client-go/tools/cache"
	clusterlisterv1alpha1 "open-cluster-management.io/api/client/cluster/listers/cluster/v1alpha1"
	clusterapiv1 "open-cluster-management.io/api/cluster/v1"
	clusterapiv1alpha1 "open-cluster-management.io/api/cluster/v1alpha1"
	ocmcelcommon "open-cluster-management.io/sdk-go/pkg/cel/common"
	ocmcellibrary "open-cluster-management.io/sdk-go/pkg/cel/library"
)

// Outcomes returned by the evaluation functions.
const (
	outcomeFalse   = 0
	outcomeTrue    = 1
	outcomeNonBool = 2
	outcomeError   = -1
	outcomeStopped = -2
	outcomeBadArgs = -3
)

var (
	mu       sync.Mutex
	indexer  = cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	env      *cel.Env
	envErr   error
	programs []cel.Program
	clusters []map[string]any
)

func environment() (*cel.Env, error) {
	if env == nil && envErr == nil {
		lister := clusterlisterv1alpha1.NewAddOnPlacementScoreLister(indexer)
		opts := append([]cel.EnvOption{
			ocmcellibrary.ManagedClusterLib(lister),
			ocmcellibrary.JsonLib(),
		}, ocmcelcommon.BaseEnvOpts...)
		env, envErr = cel.NewEnv(opts...)
	}
	return env, envErr
}

func setText(out **C.char, text string) {
	if out != nil {
		*out = C.CString(text)
	}
}

//export celgo_free
func celgo_free(p *C.char) { C.free(unsafe.Pointer(p)) }

//export celgo_set_scores
func celgo_set_scores(data *C.char, size C.int, errOut **C.char) C.int {
	mu.Lock()
	defer mu.Unlock()
	var scores []clusterapiv1alpha1.AddOnPlacementScore
	if err := json.Unmarshal(C.GoBytes(unsafe.Pointer(data), size), &scores); err != nil {
		setText(errOut, err.Error())
		return outcomeBadArgs
	}
	objects := make([]any, len(scores))
	for i := range scores {
		objects[i] = &scores[i]
	}
	if err := indexer.Replace(objects, ""); err != nil {
		setText(errOut, err.Error())
		return outcomeBadArgs
	}
	return C.int(len(objects))
}

// celgo_compile compiles an expression as OCM's CELSelector.Compile does; a negative limit means the Kubernetes
// per-call limit. It returns a program handle, or -1 with the issue text.
//
//export celgo_compile
func celgo_compile(text *C.char, size C.int, limit C.longlong, errOut **C.char) C.int {
	mu.Lock()
	defer mu.Unlock()
	e, err := environment()
	if err != nil {
		setText(errOut, "environment: "+err.Error())
		return -1
	}
	ast, issues := e.Compile(C.GoStringN(text, size))
	if issues != nil && issues.Err() != nil {
		setText(errOut, "compilation failed: "+issues.String())
		return -1
	}
	costLimit := uint64(celconfig.PerCallLimit)
	if limit >= 0 {
		costLimit = uint64(limit)
	}
	estimator := &ocmcelcommon.BaseEnvCostEstimator{CostEstimator: &ocmcellibrary.CostEstimator{}}
	prg, err := e.Program(ast,
		cel.CostLimit(costLimit),
		cel.CostTracking(estimator),
		cel.InterruptCheckFrequency(celconfig.CheckFrequency),
	)
	if err != nil {
		setText(errOut, "instantiation failed: "+err.Error())
		return -1
	}
	programs = append(programs, prg)
	return C.int(len(programs) - 1)
}

// decodeCluster reads a ManagedCluster's API JSON into the typed object and converts it as OCM does before
// every evaluation.
func decodeCluster(data []byte) (map[string]any, error) {
	var cluster clusterapiv1.ManagedCluster
	if err := json.Unmarshal(data, &cluster); err != nil {
		return nil, err
	}
	converted, err := ocmcelcommon.ConvertObjectToUnstructured(&cluster)
	if err != nil {
		return nil, err
	}
	return converted.Object, nil
}

// celgo_cluster keeps a converted cluster and returns its handle (-1 with the error text).
//
//export celgo_cluster
func celgo_cluster(data *C.char, size C.int, errOut **C.char) C.int {
	object, err := decodeCluster(C.GoBytes(unsafe.Pointer(data), size))
	if err != nil {
		setText(errOut, err.Error())
		return -1
	}
	mu.Lock()
	defer mu.Unlock()
	clusters = append(clusters, object)
	return C.int(len(clusters) - 1)
}

func evaluate(prg cel.Program, object map[string]any, cost *C.longlong, msgOut **C.char) C.int {
	value, details, err := prg.Eval(map[string]any{"managedCluster": object})
	if cost != nil {
		*cost = -1
		if details != nil && details.ActualCost() != nil {
			*cost = C.longlong(*details.ActualCost())
		}
	}
	if err != nil {
		setText(msgOut, err.Error())
		if strings.Contains(err.Error(), "cost limit exceeded") {
			return outcomeStopped
		}
		return outcomeError
	}
	if b, ok := value.(types.Bool); ok {
		if b {
			return outcomeTrue
		}
		return outcomeFalse
	}
	setText(msgOut, value.Type().TypeName())
	return outcomeNonBool
}

func lookup(program C.int) cel.Program {
	mu.Lock()
	defer mu.Unlock()
	if program < 0 || int(program) >= len(programs) {
		return nil
	}
	return programs[program]
}

// celgo_eval evaluates a program on a kept cluster: the Go-side cost of one evaluation alone.
//
//export celgo_eval
func celgo_eval(program C.int, cluster C.int, cost *C.longlong, msgOut **C.char) C.int {
	prg := lookup(program)
	mu.Lock()
	ok := cluster >= 0 && int(cluster) < len(clusters)
	var object map[string]any
	if ok {
		object = clusters[cluster]
	}
	mu.Unlock()
	if prg == nil || !ok {
		setText(msgOut, "no such program or cluster")
		return outcomeBadArgs
	}
	return evaluate(prg, object, cost, msgOut)
}

// celgo_eval_json evaluates a program on a cluster's API JSON, decoded and converted on every call as OCM
// converts the cluster before every evaluation.
//
//export celgo_eval_json
func celgo_eval_json(program C.int, data *C.char, size C.int, cost *C.longlong, msgOut **C.char) C.int {
	prg := lookup(program)
	if prg == nil {
		setText(msgOut, "no such program")
		return outcomeBadArgs
	}
	object, err := decodeCluster(C.GoBytes(unsafe.Pointer(data), size))
	if err != nil {
		setText(msgOut, err.Error())
		return outcomeBadArgs
	}
	return evaluate(prg, object, cost, msgOut)
}

func main() {}
