// Package review reads and writes the bodies of the API server's webhook
// calls (AdmissionReview, ConversionReview): what the admission server and
// the conversion endpoint share.
package review

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"
)

// Read checks that r is a POST of JSON and reads its body, at most limit
// bytes. On failure it returns the HTTP status code to answer with (405,
// 415, 413 or 400) and an error that says what was wrong.
func Read(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, int, error) {
	if r.Method != http.MethodPost {
		return nil, http.StatusMethodNotAllowed, fmt.Errorf("reviews are sent with POST, not %s", r.Method)
	}
	ct := r.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("content type %q: reviews are sent as application/json", ct)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("request body larger than %d bytes", limit)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("reading the request body: %w", err)
	case len(body) == 0:
		return nil, http.StatusBadRequest, errors.New("empty request body")
	}
	return body, http.StatusOK, nil
}

// Write answers with v as JSON and the status code.
func Write(w http.ResponseWriter, code int, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("encoding the response: %v", err), http.StatusInternalServerError)
		return fmt.Errorf("encoding the response: %w", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("writing the response: %w", err)
	}
	return nil
}

// Failure is the status of a refused review, with the standard reason of
// its code (what apierrors reads).
func Failure(code int32, message string) *metav1.Status {
	st := &metav1.Status{Status: metav1.StatusFailure, Code: code, Message: message}
	switch code {
	case http.StatusBadRequest:
		st.Reason = metav1.StatusReasonBadRequest
	case http.StatusForbidden:
		st.Reason = metav1.StatusReasonForbidden
	case http.StatusNotFound:
		st.Reason = metav1.StatusReasonNotFound
	case http.StatusMethodNotAllowed:
		st.Reason = metav1.StatusReasonMethodNotAllowed
	case http.StatusConflict:
		st.Reason = metav1.StatusReasonConflict
	case http.StatusRequestEntityTooLarge:
		st.Reason = metav1.StatusReasonRequestEntityTooLarge
	case http.StatusUnsupportedMediaType:
		st.Reason = metav1.StatusReasonUnsupportedMediaType
	case http.StatusUnprocessableEntity:
		st.Reason = metav1.StatusReasonInvalid
	case http.StatusTooManyRequests:
		st.Reason = metav1.StatusReasonTooManyRequests
	case http.StatusInternalServerError:
		st.Reason = metav1.StatusReasonInternalError
	}
	return st
}

// Head reads a review's apiVersion and kind and, when it has a request,
// that request's UID (to echo even when the rest does not decode). kind
// names the review in the error of a body that is not JSON.
func Head(body []byte, kind string) (metav1.TypeMeta, types.UID, error) {
	var head struct {
		metav1.TypeMeta `json:",inline"`
		Request         *struct {
			UID types.UID `json:"uid"`
		} `json:"request"`
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, &head); err != nil {
		return metav1.TypeMeta{}, "", fmt.Errorf("malformed %s: %w", kind, err)
	}
	var uid types.UID
	if head.Request != nil {
		uid = head.Request.UID
	}
	return head.TypeMeta, uid, nil
}
